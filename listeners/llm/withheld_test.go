package llm

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestWithheldAnswerHalts: a reply with no text and no calls because the
// provider cut it at the token limit, filtered it or the model refused
// halts the turn with the reason, so the caller does not get an empty
// answer — nor does a reply that simply stopped with nothing in it.
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
		{"an empty stop", Reply{FinishReason: FinishStop, StopReason: "stop"}, 0,
			`[mathbot halted: the model's reply was empty (stop reason "stop")]`},
		{"a blank stop", Reply{Content: "\n\t ", FinishReason: FinishStop, StopReason: "end_turn"}, 0,
			`[mathbot halted: the model's reply was empty (stop reason "end_turn")]`},
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

// Forecast is the declared answer of the structured-output tests.
type Forecast struct {
	City  string
	TempC int
}

// TestCutStructuredAnswerSaysSo: a structured answer cut at max_tokens is
// broken JSON; the feedback the model gets and the halt its caller gets
// name the cut, not only the parser's "EOF". An answer that simply does
// not fit says nothing of a cut.
func TestCutStructuredAnswerSaysSo(t *testing.T) {
	cut := Reply{Content: `{"City": "Par`, FinishReason: FinishLength, StopReason: "max_tokens"}
	tests := []struct {
		name         string
		replies      []Reply
		wantFeedback string // in the second request's last message
		wantAnswer   string // prefix
		noCut        bool
	}{
		{"cut twice", []Reply{cut, cut},
			"Your answer was cut off at max_tokens (50) before it was complete; keep it shorter. Your answer does not fit",
			"[mathbot halted: its answer did not fit Forecast twice: Your answer was cut off at max_tokens (50)", false},
		{"cut, then whole", []Reply{cut, {Content: `{"City":"Paris","TempC":21}`, FinishReason: FinishToolCalls}},
			"Your answer was cut off at max_tokens (50)", "", false},
		{"anthropic's forced answer tool, cut", []Reply{{Content: `{"City": "Par`, FinishReason: FinishStop, StopReason: "max_tokens"},
			{Content: `{"City":"Paris","TempC":21}`, FinishReason: FinishStop, StopReason: "tool_use"}},
			"Your answer was cut off at max_tokens (50)", "", false},
		{"a misfit is not a cut", []Reply{{Content: `{"City":"Paris","TempC":"warm"}`, FinishReason: FinishStop}, {Content: `{"City":"Paris","TempC":"warm"}`, FinishReason: FinishStop}},
			"Your answer does not fit the required Forecast format: TempC", "[mathbot halted: its answer did not fit Forecast twice: Your answer does not fit", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newLoopRig(t, tc.replies...)
			r.a.MaxTokens = 50
			r.a.Response = mustPT[Forecast](t)
			resp := r.deliver("console", "Paris?", "")
			reqs := r.model.requests()
			if len(reqs) != 2 {
				t.Fatalf("%d model calls, want 2", len(reqs))
			}
			fb := reqs[1].Messages[len(reqs[1].Messages)-1].Content
			if !strings.HasPrefix(fb, tc.wantFeedback) || tc.noCut && strings.Contains(fb, "cut off") {
				t.Errorf("feedback %q, want it to begin %q", fb, tc.wantFeedback)
			}
			if tc.wantAnswer == "" {
				rr, ok := resp.(*xmlpipe.RespondResponse)
				if !ok {
					t.Fatalf("response %#v, want the Forecast", resp)
				}
				if diff := cmp.Diff(`<Forecast xmlns=""><City>Paris</City><TempC>21</TempC></Forecast>`, string(rr.Payload.(*xmlpipe.Encoded).XML)); diff != "" {
					t.Errorf("answer (-want +got):\n%s", diff)
				}
				return
			}
			if got := answerText(resp); !strings.HasPrefix(got, tc.wantAnswer) || tc.noCut && strings.Contains(got, "cut off") {
				t.Errorf("answer %q, want it to begin %q", got, tc.wantAnswer)
			}
		})
	}
}

// TestCutCallArgumentsSaySo: a tool call whose arguments broke because the
// reply was cut at max_tokens is answered with the cut named, so the model
// writes a shorter call instead of repeating the same one; broken
// arguments without a cut say nothing of one.
func TestCutCallArgumentsSaySo(t *testing.T) {
	tests := []struct {
		name    string
		reply   Reply
		wantCut bool
	}{
		{"openai cut", Reply{ToolCalls: []ToolCall{toolCall("c1", "calc_v2", `{"Expression":"1+`)},
			FinishReason: FinishToolCalls, StopReason: "length"}, true},
		{"anthropic cut", Reply{ToolCalls: []ToolCall{toolCall("c1", "calc_v2", `{"Expression":"1+`)},
			FinishReason: FinishToolCalls, StopReason: "max_tokens"}, true},
		{"broken, not cut", Reply{ToolCalls: []ToolCall{toolCall("c1", "calc_v2", `{"Expression":"1+`)},
			FinishReason: FinishToolCalls, StopReason: "tool_calls"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newLoopRig(t, tc.reply, Reply{Content: "done"})
			r.a.MaxTokens = 50
			if got := answerText(r.deliver("console", "go", "")); got != "done" {
				t.Fatalf("answer %q", got)
			}
			reqs := r.model.requests()
			if len(reqs) != 2 {
				t.Fatalf("%d model calls, want 2", len(reqs))
			}
			res := reqs[1].Messages[len(reqs[1].Messages)-1]
			const note = "Your reply was cut off at max_tokens (50) while writing this call. The arguments of calc_v2 are not a JSON object"
			if res.Role != Tool || strings.HasPrefix(res.Content, note) != tc.wantCut ||
				!strings.Contains(res.Content, "The arguments of calc_v2 are not a JSON object") {
				t.Errorf("result %+v, want the cut named: %v", res, tc.wantCut)
			}
		})
	}
}
