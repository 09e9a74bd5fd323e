package config

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestMaxChainDepth: max_chain_depth defaults to 256 and is kept as
// written; a value that is not positive, or that an agent's self-iteration
// (max_iterations, 25 when unset) would reach, is refused with file:line.
func TestMaxChainDepth(t *testing.T) {
	const agent = "listeners:\n  - name: helper\n    agent: true\n    description: d\n    prompt: p\n"
	tests := []struct {
		name string
		yaml string
		want int
		errs []string // path@file:line of each problem
	}{
		{"default", "organism: {name: o}\n", 256, nil},
		{"set", "max_chain_depth: 40\n" + agent + "    max_iterations: 39\n", 40, nil},
		{"zero", "organism: {name: o}\nmax_chain_depth: 0\n", 0, []string{"max_chain_depth@organism.yaml:2"}},
		{"negative", "max_chain_depth: -3\n", 0, []string{"max_chain_depth@organism.yaml:1"}},
		{"below an agent's max_iterations", "max_chain_depth: 40\n" + agent + "    max_iterations: 40\n", 0,
			[]string{"listeners[0].max_iterations@organism.yaml:7"}},
		{"raised for an agent that iterates more", agent + "    max_iterations: 300\n", 600, nil},
		{"below the default max_iterations", "max_chain_depth: 25\n" + agent, 0,
			[]string{"max_chain_depth@organism.yaml:1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := Parse("organism.yaml", []byte(tt.yaml))
			var got []string
			if err != nil {
				joined, ok := err.(interface{ Unwrap() []error })
				if !ok {
					t.Fatalf("Parse: %v", err)
				}
				for _, e := range joined.Unwrap() {
					ce, ok := errors.AsType[*Error](e)
					if !ok {
						t.Fatalf("problem %T is not a *Error: %v", e, e)
					}
					got = append(got, ce.Path+"@"+ce.Pos.String())
				}
			}
			if diff := cmp.Diff(tt.errs, got); diff != "" {
				t.Fatalf("problems (-want +got):\n%s\nerror: %v", diff, err)
			}
			if err == nil && o.MaxChainDepth != tt.want {
				t.Errorf("MaxChainDepth = %d, want %d", o.MaxChainDepth, tt.want)
			}
		})
	}
}
