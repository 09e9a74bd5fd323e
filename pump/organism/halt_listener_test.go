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
