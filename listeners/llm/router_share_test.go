package llm

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

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

// TestForgetThreadsUnless: the sweep forgets exactly the threads keep
// rejects, keeps the agents' and backends' totals, and counts what is left.
func TestForgetThreadsUnless(t *testing.T) {
	r := NewRouter(RouterConfig{})
	for _, th := range []string{"live", "kept", "gone"} {
		r.usage.record("poet", th, "xai", Usage{PromptTokens: 10, CompletionTokens: 5})
	}
	left := r.ForgetThreadsUnless(func(th string) bool { return th != "gone" })
	got := map[string]int{}
	for _, th := range []string{"live", "kept", "gone"} {
		got[th] = r.ThreadUsage(th).Total()
	}
	if diff := cmp.Diff(map[string]int{"live": 15, "kept": 15, "gone": 0}, got); diff != "" || left != 2 {
		t.Errorf("left %d, usage (-want +got):\n%s", left, diff)
	}
	if total := r.AgentUsage("poet").Total(); total != 45 {
		t.Errorf("agent usage %d after the sweep, want 45", total)
	}
}
