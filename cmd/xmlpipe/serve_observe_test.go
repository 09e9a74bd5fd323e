package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/listeners/llm"
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
