package observe

import (
	"testing"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/aeiou"
)

func TestLoopControlEventsAreCounted(t *testing.T) {
	m := NewMetrics()
	var _ aeiou.Observer = m
	for _, e := range []aeiou.Event{
		{Type: aeiou.EventDecision, Record: &aeiou.Record{Decision: "done"}},
		{Type: aeiou.EventDecision, Record: &aeiou.Record{Decision: "done"}},
		{Type: aeiou.EventDecision, Record: &aeiou.Record{Decision: "halt", Reason: "ERR_NO_PROGRESS"}},
		{Type: aeiou.EventRejected, Reason: aeiou.ReasonReplayed},
		{Type: aeiou.EventLint, Lint: aeiou.LintMultiTokens},
		{Type: aeiou.EventMint},
		{Type: aeiou.EventMintFallback},
	} {
		m.Observe(e)
	}
	fams := gather(t, m)
	for _, tc := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"xmlpipe_aeiou_decisions_total", []string{"decision", "done", "reason", ""}, 2},
		{"xmlpipe_aeiou_decisions_total", []string{"decision", "halt", "reason", "ERR_NO_PROGRESS"}, 1},
		{"xmlpipe_aeiou_tokens_ignored_total", []string{"reason", string(aeiou.ReasonReplayed)}, 1},
		{"xmlpipe_aeiou_lints_total", []string{"lint", string(aeiou.LintMultiTokens)}, 1},
		{"xmlpipe_aeiou_mints_total", []string{"signer", "primary"}, 1},
		{"xmlpipe_aeiou_mints_total", []string{"signer", "fallback"}, 1},
	} {
		if s := sample(fams, tc.name, tc.labels...); s == nil || s.GetCounter().GetValue() != tc.want {
			t.Errorf("%s %v: %v, want %v", tc.name, tc.labels, s, tc.want)
		}
	}
}
