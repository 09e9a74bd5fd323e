package observe

import (
	"testing"
)

func TestLoopControlEventsAreCounted(t *testing.T) {
	m := NewMetrics()
	for _, e := range []LoopEvent{
		{Kind: "decision", Decision: "done"},
		{Kind: "decision", Decision: "done"},
		{Kind: "decision", Decision: "halt", Reason: "ERR_NO_PROGRESS"},
		{Kind: "ignored", Reason: "replayed"},
		{Kind: "lint", Lint: "multi_tokens"},
		{Kind: "mint"},
		{Kind: "mint_fallback"},
	} {
		m.ObserveLoop(e)
	}
	fams := gather(t, m)
	for _, tc := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"xmlpipe_aeiou_decisions_total", []string{"decision", "done", "reason", ""}, 2},
		{"xmlpipe_aeiou_decisions_total", []string{"decision", "halt", "reason", "ERR_NO_PROGRESS"}, 1},
		{"xmlpipe_aeiou_tokens_ignored_total", []string{"reason", "replayed"}, 1},
		{"xmlpipe_aeiou_lints_total", []string{"lint", "multi_tokens"}, 1},
		{"xmlpipe_aeiou_mints_total", []string{"signer", "primary"}, 1},
		{"xmlpipe_aeiou_mints_total", []string{"signer", "fallback"}, 1},
	} {
		if s := sample(fams, tc.name, tc.labels...); s == nil || s.GetCounter().GetValue() != tc.want {
			t.Errorf("%s %v: %v, want %v", tc.name, tc.labels, s, tc.want)
		}
	}
}
