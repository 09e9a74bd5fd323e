package observe

import (
	"testing"
	"time"
)

// TestCallMetrics: the LLM calls a feed delivers are counted by backend,
// model and outcome, with their duration, time to first token and tokens;
// Close stops the feed.
func TestCallMetrics(t *testing.T) {
	m := NewMetrics()
	var feed func(CallSample)
	cancelled := false
	o, _ := helloWorld(t, NewMetrics())
	if err := m.Attach(Sources{Pump: o.Pump, Calls: func(fn func(CallSample)) func() {
		feed = fn
		return func() { cancelled = true }
	}}); err != nil {
		t.Fatal(err)
	}
	feed(CallSample{Backend: "local", Model: "m1", Duration: 300 * time.Millisecond, FirstToken: 40 * time.Millisecond,
		PromptTokens: 100, CompletionTokens: 20})
	feed(CallSample{Backend: "local", Model: "m1", Duration: 2 * time.Second, Failed: true})
	// An aborted call (an operator's halt, cancel or kill mid call) is not
	// the backend failing: it has its own outcome, and its tokens (an
	// estimate) stay out of the histogram of completed calls.
	feed(CallSample{Backend: "local", Model: "m1", Duration: time.Second, FirstToken: 10 * time.Millisecond,
		PromptTokens: 50, CompletionTokens: 3, Failed: true, Aborted: true})
	fams := gather(t, m)
	if v := sample(fams, "xmlpipe_llm_calls_total", "backend", "local", "model", "m1", "outcome", "ok"); v == nil ||
		v.GetCounter().GetValue() != 1 {
		t.Errorf("ok calls: %v", v)
	}
	if v := sample(fams, "xmlpipe_llm_calls_total", "backend", "local", "model", "m1", "outcome", "error"); v == nil ||
		v.GetCounter().GetValue() != 1 {
		t.Errorf("failed calls: %v", v)
	}
	if v := sample(fams, "xmlpipe_llm_calls_total", "backend", "local", "model", "m1", "outcome", "aborted"); v == nil ||
		v.GetCounter().GetValue() != 1 {
		t.Errorf("aborted calls: %v", v)
	}
	if h := sample(fams, "xmlpipe_llm_call_duration_seconds", "backend", "local", "model", "m1").GetHistogram(); h.GetSampleCount() != 3 ||
		h.GetSampleSum() != 3.3 {
		t.Errorf("duration: %v", h)
	}
	if h := sample(fams, "xmlpipe_llm_call_first_token_seconds", "backend", "local", "model", "m1").GetHistogram(); h.GetSampleCount() != 2 {
		t.Errorf("first token: %v", h)
	}
	if h := sample(fams, "xmlpipe_llm_call_tokens", "backend", "local", "kind", "prompt", "model", "m1").GetHistogram(); h.GetSampleCount() != 1 ||
		h.GetSampleSum() != 100 {
		t.Errorf("prompt tokens: %v", h)
	}
	m.Close()
	if !cancelled {
		t.Error("Close did not stop the call feed")
	}
}
