package organism

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// haltTwoAgents is haltOrganism's thinker beside a second agent.
const haltTwoAgents = `listeners:
  - name: thinker
    agent: true
    description: Thinks slowly
    prompt: You are thinker.
  - name: poet
    agent: true
    description: Writes poems
    prompt: You are poet.
`

// Halting one agent aborts its model request at once and holds its
// messages, while another agent goes on answering; resuming that agent
// runs its interrupted turn and what waited, nothing lost. An unknown name
// is refused.
func TestHaltListenerStopsOneAgentNow(t *testing.T) {
	m := newHangingModel(t)
	o := agentOrganismWith(t, &scriptedModel{Server: m.Server}, haltTwoAgents, Options{})
	interrupted := startConversation(t, o, "thinker", "think hard")
	select {
	case <-m.started:
	case <-time.After(60 * time.Second):
		t.Fatal("the model request never started")
	}
	t0 := time.Now()
	rep, err := o.Governance().HaltListener("operator", "Thinker")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(pump.HaltReport{Listener: "thinker", Cancelled: 1}, rep); diff != "" {
		t.Fatalf("HaltListener report (-want +got):\n%s", diff)
	}
	select {
	case at := <-m.closed:
		t.Logf("the model request was closed %v after the halt", at.Sub(t0))
	case <-time.After(5 * time.Second):
		t.Fatal("the model request was not closed within 5 s of the halt")
	}
	if _, ok := o.Governance().Halted(); ok {
		t.Error("a listener's halt reads as the organism's")
	}
	if got := o.Governance().HaltedListeners(); !cmp.Equal(got, []string{"thinker"}) {
		t.Errorf("HaltedListeners() = %v", got)
	}
	// The other agent answers meanwhile; the halted one takes nothing.
	if got := startConversation(t, o, "poet", "a poem").answer(t); got != "answered after the halt" {
		t.Fatalf("poet during thinker's halt: %q", got)
	}
	waiting := startConversation(t, o, "thinker", "and this")
	if n := m.requests(); n != 2 {
		t.Fatalf("%d model requests during the halt, want 2 (thinker's aborted one, poet's)", n)
	}
	if _, err := o.Governance().HaltListener("operator", "nobody"); !errors.Is(err, pump.ErrUnknownListener) {
		t.Errorf("HaltListener(nobody) = %v, want ErrUnknownListener", err)
	}
	if o.Governance().ResumeListener("operator", "poet") {
		t.Error("ResumeListener(poet) resumed a listener that was not halted")
	}
	if !o.Governance().ResumeListener("operator", "thinker") {
		t.Fatal("ResumeListener(thinker): not halted")
	}
	for _, c := range []*conversation{interrupted, waiting} {
		if got := c.answer(t); got != "answered after the halt" {
			t.Errorf("thinker after the resume: %q", got)
		}
	}
	if got := o.Governance().HaltedListeners(); len(got) != 0 {
		t.Errorf("HaltedListeners() after the resume = %v", got)
	}
}

// A listener's halt is kept across a restart of a durable organism, as the
// organism's is, until it is resumed — alone or by the organism's resume.
func TestHaltListenerKeptAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	start := func() *Organism {
		t.Helper()
		o, err := New(helloConfig(t, nil), Options{DataDir: dir, Logger: fedLogger()})
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Start(); err != nil {
			t.Fatal(err)
		}
		return o
	}
	stop := func(o *Organism) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := o.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
	}
	o := start()
	if _, err := o.Governance().HaltListener("operator", "shouter"); err != nil {
		t.Fatal(err)
	}
	stop(o)
	o = start()
	if got := o.Governance().HaltedListeners(); !cmp.Equal(got, []string{"shouter"}) {
		t.Fatalf("after a restart the halted listeners are %v, want [shouter]", got)
	}
	if _, ok := o.Governance().Halted(); ok {
		t.Fatal("after a restart the organism reads halted")
	}
	if !o.Governance().ResumeListener("operator", "shouter") {
		t.Fatal("ResumeListener found no halt")
	}
	if _, err := os.Stat(filepath.Join(dir, haltFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the halt file after the last halt was lifted: %v", err)
	}
	if _, err := o.Governance().HaltListener("operator", "shouter"); err != nil {
		t.Fatal(err)
	}
	if !o.Governance().Resume("operator") {
		t.Fatal("Resume found no halt")
	}
	stop(o)
	o = start()
	defer stop(o)
	if got := o.Governance().HaltedListeners(); len(got) != 0 {
		t.Fatalf("a halt lifted before the restart is in force again: %v", got)
	}
}

func TestParseHaltFile(t *testing.T) {
	for _, tc := range []struct {
		text      string
		scope     pump.HaltScope
		listeners []string
	}{
		{"agents\n", pump.HaltAgents, nil},
		{"all\n", pump.HaltAll, nil},
		{"listener thinker\n", 0, []string{"thinker"}},
		{"agents\nlistener a\nlistener b\n", pump.HaltAgents, []string{"a", "b"}},
		{"", pump.HaltAll, nil},                           // torn: everything
		{"listener a\nlist", pump.HaltAll, []string{"a"}}, // torn mid-line
	} {
		scope, ls := parseHaltFile(tc.text)
		if scope != tc.scope || !cmp.Equal(ls, tc.listeners) {
			t.Errorf("parseHaltFile(%q) = %v %v, want %v %v", tc.text, scope, ls, tc.scope, tc.listeners)
		}
	}
}

// Halting an agent stops the tool call it has running too: the tool's
// handler is cancelled with ErrHalted and its message waits, not run
// again, until the agent is resumed; then it runs once more and the agent
// answers.
func TestHaltListenerStopsItsToolCall(t *testing.T) {
	m := newScriptedModel(t, map[string][]string{
		"worker": {toolCalls(scriptedCall{ID: "call_b", Name: "blocker", Arguments: `{"Text":"go"}`}), "worker answers"}})
	began, ended, release := make(chan string, 4), make(chan error, 4), make(chan struct{})
	blocker := Func("blocker", "Blocks until the test releases it",
		func(ctx context.Context, q *ReloadProbe, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
			began <- q.Text
			select {
			case <-release:
			case <-ctx.Done():
				ended <- context.Cause(ctx)
				return nil, ctx.Err()
			}
			return xmlpipe.Respond(&ReloadProbeDone{Text: "done " + q.Text}), nil
		})
	t.Setenv("TEST_LLM_KEY", "sk-test")
	path := filepath.Join(t.TempDir(), "organism.yaml")
	if err := os.WriteFile(path, []byte(reloadHead(m.URL)+`listeners:
  - name: worker
    agent: true
    description: Works with a slow tool
    prompt: You are worker.
    peers: [blocker]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.LoadWith(path, []string{"blocker"})
	if err != nil {
		t.Fatal(err)
	}
	o, err := New(cfg, Options{Listeners: []Listener{blocker}, Logger: testLogger()})
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
	c := startConversation(t, o, "worker", "work")
	wait := func(what string, ch <-chan string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(60 * time.Second):
			t.Fatal(what)
		}
	}
	wait("the worker never called its tool", began)
	rep, err := o.Governance().HaltListener("operator", "worker")
	if err != nil || rep.Cancelled != 1 {
		t.Fatalf("HaltListener: %+v %v", rep, err)
	}
	select {
	case cause := <-ended:
		if !errors.Is(cause, xmlpipe.ErrHalted) {
			t.Fatalf("the tool call ended with %v, want ErrHalted", cause)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the halt did not stop the tool call")
	}
	// Its message waits at the tool, not run again while the worker is halted.
	for deadline := time.Now().Add(60 * time.Second); ; {
		var depth, active int
		for _, l := range o.Pump.Listeners() {
			if l.Name == "blocker" {
				depth, active = l.QueueDepth, l.Active
			}
		}
		if depth == 1 && active == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tool's queue: depth %d, active %d; want the call waiting", depth, active)
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case <-began:
		t.Fatal("the tool call ran again while the worker was halted")
	default:
	}
	if !o.Governance().ResumeListener("operator", "worker") {
		t.Fatal("ResumeListener: not halted")
	}
	wait("the tool call did not run again after the resume", began)
	close(release)
	if got := c.answer(t); got != "worker answers" {
		t.Fatalf("worker after the resume: %q", got)
	}
}
