package llm

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestWithheldAnswerHalts: a reply with no text and no calls because the
// provider cut it at the token limit, filtered it or the model refused
// halts the turn with the reason, so the caller does not get an empty
// answer; an empty reply that simply stopped is still the answer.
func TestWithheldAnswerHalts(t *testing.T) {
	tests := []struct {
		name       string
		reply      Reply
		maxTokens  int
		wantAnswer string
	}{
		{"reasoning used every token", Reply{FinishReason: FinishLength, StopReason: "length"}, 400,
			`[mathbot halted: the model's reply was cut at max_tokens (400) before any answer (stop reason "length")]`},
		{"no max_tokens set", Reply{Content: " \n", FinishReason: FinishLength, StopReason: "max_tokens"}, 0,
			`[mathbot halted: the model's reply was cut at the output token limit before any answer (stop reason "max_tokens")]`},
		{"content filter", Reply{FinishReason: FinishContentFilter, StopReason: "content_filter"}, 0,
			`[mathbot halted: the provider withheld the model's answer (stop reason "content_filter")]`},
		{"silent refusal", Reply{FinishReason: FinishRefusal, StopReason: "refusal"}, 0,
			`[mathbot halted: the model declined to answer (stop reason "refusal")]`},
		{"cut text is still the answer", Reply{Content: "Rain falls on", FinishReason: FinishLength, StopReason: "length"}, 400,
			"Rain falls on"},
		{"an empty stop is the answer", Reply{FinishReason: FinishStop, StopReason: "stop"}, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newLoopRig(t, tc.reply)
			r.a.MaxTokens = tc.maxTokens
			if diff := cmp.Diff(tc.wantAnswer, answerText(r.deliver("console", "go", ""))); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
			if n := len(r.model.requests()); n != 1 {
				t.Errorf("%d model calls, want 1", n)
			}
		})
	}
}
