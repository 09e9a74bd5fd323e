package organism

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestThreadBudgetCountsAcrossTurns: budgets.thread_tokens counts every turn
// of a conversation continued on its thread id, not only the current one —
// each scripted call costs 18 tokens, so with a budget of 30 the third turn
// is halted — while another conversation has a budget of its own.
func TestThreadBudgetCountsAcrossTurns(t *testing.T) {
	m := newScriptedModel(t, map[string][]string{"poet": {"answer 1", "answer 2", "answer 3", "answer 4"}})
	o := durableAgents(t, m, t.TempDir(), "budgets: {thread_tokens: 30}\n"+twoAgents)
	t.Cleanup(func() {
		if err := o.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	alice := pump.Principal{From: "api:alice", User: "alice"}
	first, second := stage.NewThreadID(), stage.NewThreadID()
	var got []string
	for _, turn := range []struct{ thread, text string }{
		{first, "one"}, {first, "two"}, {first, "three"}, {second, "fresh"},
	} {
		answer, err := askAs(t, o, alice, "poet", turn.thread, turn.text)
		if err != nil {
			t.Fatalf("%s: %v", turn.text, err)
		}
		got = append(got, answer)
	}
	want := []string{"answer 1", "answer 2", "[poet halted: thread token budget exhausted (36 of 30)]", "answer 3"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
}

// TestThreadBudgetCountsAcrossRestarts: a durable organism's restart keeps
// what each continued thread spent — before, every live or kept thread had
// its whole budget again after a restart (or each crash of a loop).
func TestThreadBudgetCountsAcrossRestarts(t *testing.T) {
	m := newScriptedModel(t, map[string][]string{"poet": {"answer 1", "answer 2", "answer 3", "answer 4"}})
	dir := t.TempDir()
	alice := pump.Principal{From: "api:alice", User: "alice"}
	first, second := stage.NewThreadID(), stage.NewThreadID()
	var got []string
	ask := func(o *Organism, thread, text string) {
		t.Helper()
		answer, err := askAs(t, o, alice, "poet", thread, text)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		got = append(got, answer)
	}
	o := durableAgents(t, m, dir, "budgets: {thread_tokens: 30}\n"+twoAgents)
	ask(o, first, "one")
	ask(o, first, "two")
	if err := o.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	o = durableAgents(t, m, dir, "budgets: {thread_tokens: 30}\n"+twoAgents)
	t.Cleanup(func() {
		if err := o.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	ask(o, first, "three")
	ask(o, second, "fresh")
	want := []string{"answer 1", "answer 2", "[poet halted: thread token budget exhausted (36 of 30)]", "answer 3"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
}
