package llm

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/config"
)

// fixedUsage reports the same usage for every agent and thread.
type fixedUsage Usage

func (u fixedUsage) AgentUsage(string) Usage  { return Usage(u) }
func (u fixedUsage) ThreadUsage(string) Usage { return Usage(u) }

// recordingChat answers "hi" and keeps the last request.
type recordingChat struct{ last *Request }

func (c recordingChat) Chat(_ context.Context, r Request) (Reply, error) {
	*c.last = r
	return Reply{Content: "hi"}, nil
}

func TestCompleter(t *testing.T) {
	tests := []struct {
		name   string
		budget Budget
		used   int
		want   error
	}{
		{"no budget", Budget{}, 1000, nil},
		{"under the thread budget", Budget{ThreadTokens: 100}, 99, nil},
		{"thread budget stop", Budget{ThreadTokens: 100}, 100, ErrBudget},
		{"agent budget stop", Budget{AgentTokens: 10, OnExceed: config.ExceedStop}, 10, ErrBudget},
		{"agent budget warn", Budget{AgentTokens: 10, OnExceed: config.ExceedWarn}, 50, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var last Request
			c := &Completer{LLM: recordingChat{&last}, Prompts: map[string]string{"greeter": "Be kind."},
				Models: map[string]string{"greeter": "grok-x"}, Budget: tc.budget, Usage: fixedUsage{PromptTokens: tc.used}}
			out, err := c.Complete(context.Background(), "greeter", "t1", "Greet Dan")
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if err != nil {
				return
			}
			want := []Message{{Role: System, Content: Constitution()}, {Role: System, Content: "Be kind."}, {Role: User, Content: "Greet Dan"}}
			if out != "hi" || last.Model != "grok-x" || last.Agent != "greeter" || last.Thread != "t1" || len(last.Messages) != 3 {
				t.Fatalf("out %q, request %+v", out, last)
			}
			if diff := cmp.Diff(want, last.Messages); diff != "" {
				t.Errorf("messages (-want +got):\n%s", diff)
			}
		})
	}
}
