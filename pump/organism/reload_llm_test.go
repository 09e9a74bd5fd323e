package organism

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/listeners/llm"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// ReloadProbe is the message the worker agent sends the blocker tool.
type ReloadProbe struct{ Text string }

// ReloadProbeDone is the blocker's answer.
type ReloadProbeDone struct{ Text string }

// reloadLLMAgents are the agents of TestReloadedBackendReachesRunningConversations:
// researcher waits for an approval, worker for a tool written in Go,
// chat between two turns.
const reloadLLMAgents = `listeners:
  - name: researcher
    agent: true
    description: Looks things up
    prompt: You are researcher.
    tools: [run_command]
    tool_config:
      run_command: {allowed_commands: [date]}
    approval: [run_command]
  - name: worker
    agent: true
    description: Works with a slow tool
    prompt: You are worker.
    peers: [blocker]
  - name: chat
    agent: true
    description: Chats
    prompt: You are chat.
`

// A reload that switches the LLM backend reaches every conversation at its
// next model call: one waiting for an approval, one waiting for a tool, one
// between two turns — the old backend is gone (closed) by then.
func TestReloadedBackendReachesRunningConversations(t *testing.T) {
	oldM := newScriptedModel(t, map[string][]string{
		"researcher": {runDate}, "worker": {toolCalls(scriptedCall{ID: "call_b", Name: "blocker", Arguments: `{"Text":"go"}`})},
		"chat": {"chat from old"}})
	newM := newScriptedModel(t, map[string][]string{
		"researcher": {"researcher from new"}, "worker": {"worker from new"}, "chat": {"chat from new"}})
	began, release := make(chan string, 1), make(chan struct{})
	blocker := Func("blocker", "Blocks until the test releases it",
		func(ctx context.Context, q *ReloadProbe, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
			began <- q.Text
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return xmlpipe.Respond(&ReloadProbeDone{Text: "done " + q.Text}), nil
		})
	dir := t.TempDir()
	load := func(doc string) *config.Organism {
		path := filepath.Join(dir, "organism.yaml")
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.LoadWith(path, []string{"blocker"})
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	t.Setenv("TEST_LLM_KEY", "sk-test")
	o, err := New(load(reloadHead(oldM.URL)+reloadLLMAgents), Options{Listeners: []Listener{blocker}, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := o.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})

	alice := pump.Principal{From: "api:alice", User: "alice"}
	thread := stage.NewThreadID()
	if got, err := askAs(t, o, alice, "chat", thread, "first"); err != nil || got != "chat from old" {
		t.Fatalf("chat's first turn: %q, %v", got, err)
	}
	researcher := startConversation(t, o, "researcher", "what day is it?")
	approval := pendingApproval(t, o)
	worker := startConversation(t, o, "worker", "work")
	select {
	case <-began:
	case <-time.After(60 * time.Second):
		t.Fatal("the worker never called its tool")
	}

	report, err := o.Reload(load(reloadHead(newM.URL) + reloadLLMAgents))
	if err != nil {
		t.Fatal(err)
	}
	if !report.LLM {
		t.Fatalf("report %+v: no new LLM router", report)
	}
	oldM.Close() // the old backend is gone

	close(release)
	if _, err := o.Governance().Decide(t.Context(), approval.ID, true, "alice", ""); err != nil {
		t.Fatal(err)
	}
	second, err := askAs(t, o, alice, "chat", thread, "second")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{"researcher": researcher.answer(t), "worker": worker.answer(t), "chat": second}
	want := map[string]string{"researcher": "researcher from new", "worker": "worker from new", "chat": "chat from new"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answers after the reload (-want +got):\n%s", diff)
	}
	for agent := range want {
		if n := len(newM.requests(agent)); n != 1 {
			t.Errorf("%s: %d requests to the new backend, want 1", agent, n)
		}
	}
	if reqs := newM.requests("chat"); len(reqs) == 1 && !strings.Contains(reqs[0].Messages[len(reqs[0].Messages)-1]["content"], "second") {
		t.Errorf("chat's request to the new backend: %v", reqs[0].Messages)
	}
}

// testLogger discards the log, unless the test runs verbose.
func testLogger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// A reload that lowers the token budgets reaches a conversation already
// running: one waiting for an approval when the reload came is checked
// against the new budget at its next model call.
func TestReloadedBudgetReachesRunningConversations(t *testing.T) {
	m := newScriptedModel(t, map[string][]string{"researcher": {runDate, "researcher answers"}})
	dir := t.TempDir()
	o := reloadOrganism(t, dir, reloadHead(m.URL)+governed)
	c := startConversation(t, o, "researcher", "what day is it?")
	a := pendingApproval(t, o) // the first model call spent 18 tokens (11 + 7)
	if _, err := o.Reload(parseIn(t, dir, reloadHead(m.URL)+"budgets: {thread_tokens: 10, on_exceed: stop}\n"+governed)); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Governance().Decide(t.Context(), a.ID, true, "alice", ""); err != nil {
		t.Fatal(err)
	}
	e := c.reply(t)
	h, ok := e.Payload.(*llm.Halted)
	if !ok || !strings.Contains(h.Text, "thread token budget exhausted (18 of 10)") {
		t.Errorf("after the reload lowered the budget the conversation got %s %T %+v", e.Kind, e.Payload, e.Payload)
	}
	if n := len(m.requests("researcher")); n != 1 {
		t.Errorf("%d model calls, want 1 (the step after the approval is over budget)", n)
	}
}

// A reload that changes an agent's prompt gives the new prompt to the
// conversations that start after it; one running at the reload (here
// waiting for an approval) goes on with the prompt it began with, as with
// every other change of its agent (README, Reload).
func TestReloadedPromptReachesNewConversations(t *testing.T) {
	m := newScriptedModel(t, map[string][]string{"researcher": {runDate, "researcher answers", runDate, "researcher answers"}})
	dir := t.TempDir()
	o := reloadOrganism(t, dir, reloadHead(m.URL)+governed)
	c := startConversation(t, o, "researcher", "what day is it?")
	a := pendingApproval(t, o)
	changed := strings.Replace(governed, "prompt: You are researcher.", "prompt: You are researcher. Be brief.", 1)
	if _, err := o.Reload(parseIn(t, dir, reloadHead(m.URL)+changed)); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Governance().Decide(t.Context(), a.ID, true, "alice", ""); err != nil {
		t.Fatal(err)
	}
	if got := c.answer(t); got != "researcher answers" {
		t.Fatalf("running conversation's answer %q", got)
	}
	fresh := startConversation(t, o, "researcher", "and now?")
	if _, err := o.Governance().Decide(t.Context(), pendingApproval(t, o).ID, true, "alice", ""); err != nil {
		t.Fatal(err)
	}
	fresh.answer(t)
	var prompts []string
	for _, r := range m.requests("researcher") {
		prompts = append(prompts, r.Messages[1]["content"])
	}
	want := []string{"You are researcher.", "You are researcher.", "You are researcher. Be brief.", "You are researcher. Be brief."}
	if diff := cmp.Diff(want, prompts, cmp.Transformer("prefix", func(s string) string {
		s, _, _ = strings.Cut(s, "\n")
		return s
	})); diff != "" {
		t.Errorf("system prompts of the model calls (-want +got):\n%s", diff)
	}
}
