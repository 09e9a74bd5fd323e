package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// TestCallLineOutcomes: `xmlpipe journal` tells a call an operator's
// halt, cancel or kill stopped (aborted, with the tokens it spent) from
// one that failed, as /usage and the calls API do, and marks tokens that
// are an estimate ≈.
func TestCallLineOutcomes(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		row  store.CallRow
		want string
	}{
		{"completed", store.CallRow{ID: 1, Time: at, Agent: "poet", Backend: "local", Model: "m", Attempt: 1,
			PromptTokens: 11, CompletionTokens: 7, FirstToken: 120 * time.Millisecond, Duration: 830 * time.Millisecond,
			FinishReason: "stop"},
			"llm call 1 2026-03-01T12:00:00Z poet local/m attempt 1: 11 + 7 tokens, first token 120ms, total 830ms, stop"},
		{"failed", store.CallRow{ID: 2, Time: at, Agent: "poet", Backend: "local", Model: "m", Attempt: 1,
			Duration: 12500 * time.Millisecond, Error: "HTTP 503 Service Unavailable"},
			"llm call 2 2026-03-01T12:00:00Z poet local/m attempt 1: failed after 12.5s: HTTP 503 Service Unavailable"},
		{"aborted", store.CallRow{ID: 3, Time: at, Agent: "poet", Backend: "local", Model: "m", Attempt: 1,
			PromptTokens: 30, CompletionTokens: 4, Duration: 1500 * time.Millisecond, FinishReason: organism.FinishAborted,
			Error: "context canceled (after: read reply: pump: halted)", UsageEstimated: true},
			"llm call 3 2026-03-01T12:00:00Z poet local/m attempt 1: aborted after 1.5s, ≈30 + 4 tokens spent: " +
				"context canceled (after: read reply: pump: halted)"},
		{"estimated", store.CallRow{ID: 4, Time: at, Agent: "poet", Backend: "local", Model: "m", Attempt: 1,
			PromptTokens: 11, CompletionTokens: 7, Duration: 830 * time.Millisecond, FinishReason: "stop", UsageEstimated: true},
			"llm call 4 2026-03-01T12:00:00Z poet local/m attempt 1: ≈11 + 7 tokens, first token 0s, total 830ms, stop"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, callLine(tc.row)); d != "" {
				t.Errorf("callLine (-want +got):\n%s", d)
			}
		})
	}
}
