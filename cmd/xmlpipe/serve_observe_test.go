package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/listeners/llm"
	"github.com/xml-pipeline/xmlpipe/listeners/llm/aeiou"
	"github.com/xml-pipeline/xmlpipe/pump/observe"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
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

// TestCallSampleOf: the metrics tell a model call the backend failed from
// one its caller stopped (an operator's halt, cancel or kill, a reload):
// the latter is aborted, as the journal and /usage say, not an error.
func TestCallSampleOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   organism.Call
		want observe.CallSample
	}{
		{"completed", organism.Call{Backend: "b", Model: "m", PromptTokens: 10, CompletionTokens: 2, Duration: time.Second},
			observe.CallSample{Backend: "b", Model: "m", PromptTokens: 10, CompletionTokens: 2, Duration: time.Second}},
		{"failed", organism.Call{Backend: "b", Model: "m", Error: "503"},
			observe.CallSample{Backend: "b", Model: "m", Failed: true}},
		{"aborted", organism.Call{Backend: "b", Model: "m", Error: "context canceled", FinishReason: organism.FinishAborted,
			PromptTokens: 40, CompletionTokens: 3, FirstToken: time.Millisecond},
			observe.CallSample{Backend: "b", Model: "m", Failed: true, Aborted: true, PromptTokens: 40, CompletionTokens: 3,
				FirstToken: time.Millisecond}},
	} {
		if diff := cmp.Diff(tc.want, callSampleOf(tc.in)); diff != "" {
			t.Errorf("%s: callSampleOf (-want +got):\n%s", tc.name, diff)
		}
	}
}
