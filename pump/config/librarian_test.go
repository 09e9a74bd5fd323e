package config

import (
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// TestLibrarianConfig: an agent's librarian: block and route: key parse
// with their defaults; out-of-range values and the keys on a listener that
// is no YAML agent are refused with file:line.
func TestLibrarianConfig(t *testing.T) {
	const agent = "listeners:\n  - name: helper\n    agent: true\n    description: d\n    prompt: p\n"
	o, err := Parse("/o/organism.yaml", []byte(agent+"    route: true\n    librarian: {model: small, fold_below: 0.1, "+
		"keep_recent: 0, summary_timeout: 5s}\n"))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	l := o.Listeners[0]
	if !l.Route || l.Librarian == nil {
		t.Fatalf("route %v, librarian %+v", l.Route, l.Librarian)
	}
	lb := l.Librarian
	if lb.Model != "small" || lb.FoldBelow.Or(DefaultFoldBelow) != 0.1 || lb.UnfoldAbove.Or(DefaultUnfoldAbove) != 0.2 ||
		lb.KeepRecentOr() != 0 || lb.MinFoldTokensOr() != DefaultMinFoldTokens || lb.SummaryTimeout.D() != 5*time.Second {
		t.Errorf("librarian %+v", lb)
	}
	if o, err := Parse("/o/organism.yaml", []byte(agent+"    librarian: {}\n")); err != nil || o.Listeners[0].Librarian == nil {
		t.Fatalf("librarian: {} → %v", err)
	}
	for _, tt := range []struct{ name, src, want string }{
		{"fold_below range", agent + "    librarian: {fold_below: 1.5}\n", "organism.yaml:6: listeners[0].librarian.fold_below: want a number from 0 to 1"},
		{"unfold under fold", agent + "    librarian: {fold_below: 0.3, unfold_above: 0.1}\n", "unfold_above: want at least fold_below"},
		{"keep_recent negative", agent + "    librarian: {keep_recent: -1}\n", "librarian.keep_recent"},
		{"not a number", agent + "    librarian: {fold_below: high}\n", "want a number"},
		{"unknown key", agent + "    librarian: {modle: x}\n", `unknown key "modle" (did you mean "model"?)`},
		{"key out of its block", agent + "    fold_below: 0.1\n", "did you mean listeners[].librarian.fold_below?"},
		{"route on a tool", "listeners:\n  - name: calc\n    payload_class: x.Y\n    handler: x.h\n    description: d\n    route: true\n",
			"only agents take route"},
		{"route in xml mode", agent + "    tool_calling: xml\n    route: true\n",
			"organism.yaml:7: listeners[0].route: the route tool needs native tool calling; this agent has tool_calling: xml"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("/o/organism.yaml", []byte(tt.src))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
}

// TestRatioMarshal: a ratio is written as its number, unset as null.
func TestRatioMarshal(t *testing.T) {
	for _, tt := range []struct {
		r    Ratio
		want string
	}{{Ratio{Value: 0.25, Set: true}, "0.25\n"}, {Ratio{}, "null\n"}} {
		b, err := yaml.Marshal(tt.r)
		if err != nil || string(b) != tt.want {
			t.Errorf("%+v: %q, %v; want %q", tt.r, b, err, tt.want)
		}
	}
}
