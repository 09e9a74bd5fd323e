package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/listeners/llm"
	"github.com/xml-pipeline/xmlpipe/listeners/llm/aeiou"
	"github.com/xml-pipeline/xmlpipe/pump/observe"
)

// TestUsageOf checks the copy of the LLM router's usage ledger into the
// metrics' own type: every name and every count carried.
func TestUsageOf(t *testing.T) {
	in := map[string]llm.Usage{
		"planner": {PromptTokens: 100, CompletionTokens: 20, Requests: 3},
		"critic":  {PromptTokens: 7, CompletionTokens: 0, Requests: 1},
	}
	want := map[string]observe.Usage{
		"planner": {PromptTokens: 100, CompletionTokens: 20, Requests: 3},
		"critic":  {PromptTokens: 7, CompletionTokens: 0, Requests: 1},
	}
	if diff := cmp.Diff(want, usageOf(in)); diff != "" {
		t.Errorf("usageOf (-want +got):\n%s", diff)
	}
	if got := usageOf(nil); got == nil || len(got) != 0 {
		t.Errorf("usageOf(nil) = %#v, want an empty map", got)
	}
}

// TestLoopEventOf: every AEIOU event kind reaches the metrics with its labels.
func TestLoopEventOf(t *testing.T) {
	for _, tc := range []struct {
		in   aeiou.Event
		want observe.LoopEvent
	}{
		{aeiou.Event{Type: aeiou.EventDecision, Record: &aeiou.Record{Decision: "halt", Reason: "ERR_NO_PROGRESS"}},
			observe.LoopEvent{Kind: "decision", Decision: "halt", Reason: "ERR_NO_PROGRESS"}},
		{aeiou.Event{Type: aeiou.EventDecision}, observe.LoopEvent{}},
		{aeiou.Event{Type: aeiou.EventRejected, Reason: aeiou.ReasonReplayed},
			observe.LoopEvent{Kind: "ignored", Reason: string(aeiou.ReasonReplayed)}},
		{aeiou.Event{Type: aeiou.EventLint, Lint: aeiou.LintMultiTokens},
			observe.LoopEvent{Kind: "lint", Lint: string(aeiou.LintMultiTokens)}},
		{aeiou.Event{Type: aeiou.EventMint}, observe.LoopEvent{Kind: "mint"}},
		{aeiou.Event{Type: aeiou.EventMintFallback}, observe.LoopEvent{Kind: "mint_fallback"}},
		{aeiou.Event{Type: aeiou.EventMintFailed}, observe.LoopEvent{Kind: "mint_failed"}},
	} {
		if diff := cmp.Diff(tc.want, loopEventOf(tc.in)); diff != "" {
			t.Errorf("loopEventOf(%v) (-want +got):\n%s", tc.in.Type, diff)
		}
	}
}
