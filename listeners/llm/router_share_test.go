package llm

import "testing"

func TestShareUsage(t *testing.T) {
	old, next := NewRouter(RouterConfig{}), NewRouter(RouterConfig{})
	old.usage.record("poet", "t1", "xai", Usage{PromptTokens: 10, CompletionTokens: 5})
	next.ShareUsage(old)
	next.usage.record("poet", "t1", "ollama", Usage{PromptTokens: 1, CompletionTokens: 1})
	if got := next.AgentUsage("poet"); got.PromptTokens != 11 || got.CompletionTokens != 6 {
		t.Fatalf("agent usage across the change: %+v", got)
	}
	if got := old.ThreadUsage("t1"); got.PromptTokens != 11 {
		t.Fatalf("the old router does not see the shared ledger: %+v", got)
	}
}
