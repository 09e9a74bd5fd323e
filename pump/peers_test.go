package pump_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestAddPeers: an agent's peers grow while the pump runs — the new peer is
// reachable from the next message on, shows in Listeners, and its schema is
// in the agent's usage instructions; names it has are not repeated, and a
// non-agent or an unknown listener is refused.
func TestAddPeers(t *testing.T) {
	usage := make(chan string, 4)
	planner := agent(listenerOf(t, "planner", func(_ context.Context, in *ChainA, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		usage <- md.UsageInstructions
		return xmlpipe.Send(in.Text, &ChainB{Text: "go"}), nil
	}), "helper")
	helper := listenerOf(t, "helper", func(context.Context, *ChainC, xmlpipe.Metadata) (xmlpipe.Response, error) { return nil, nil })
	reached := make(chan string, 1)
	late := listenerOf(t, "late", func(_ context.Context, _ *ChainB, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		reached <- md.From
		return nil, nil
	})
	p := startPump(t, pump.Options{}, planner, helper, late)

	out := newRecorder()
	mustSend(t, p, client, "planner", &ChainA{Text: "late"}, out)
	if u := recv(t, usage); strings.Contains(u, "ChainB") {
		t.Fatalf("usage names late before it was added:\n%s", u)
	}
	out.waitFor(t, "the refused conversation to end", kind(pump.EventComplete))

	if err := p.AddPeers("planner", "late", "HELPER"); err != nil {
		t.Fatal(err)
	}
	for _, l := range p.Listeners() {
		if l.Name == "planner" {
			if diff := cmp.Diff([]string{"helper", "late"}, l.Peers); diff != "" {
				t.Errorf("peers (-want +got):\n%s", diff)
			}
		}
	}
	out = newRecorder()
	mustSend(t, p, client, "planner", &ChainA{Text: "late"}, out)
	if u := recv(t, usage); !strings.Contains(u, "late") || !strings.Contains(u, "<ChainB>") {
		t.Fatalf("usage lacks the added peer's schema:\n%s", u)
	}
	if from := recv(t, reached); from != "planner" {
		t.Fatalf("late reached from %s", from)
	}
	if err := p.AddPeers("late", "planner"); !errors.Is(err, pump.ErrBadListener) {
		t.Errorf("non-agent: %v", err)
	}
	if err := p.AddPeers("nobody", "late"); !errors.Is(err, pump.ErrUnknownListener) {
		t.Errorf("unknown: %v", err)
	}
}

// recv takes the next value from ch, failing the test after 10 s.
func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("nothing received in 10s")
		panic("unreachable")
	}
}

// TestRebuildPeers: a peer replaced by a Change with another contract (a
// federation import whose peer changed its schema) is described to the
// agents naming it by its new contract once their peers are rebuilt, from
// their next message on.
func TestRebuildPeers(t *testing.T) {
	usage := make(chan string, 4)
	planner := agent(listenerOf(t, "planner", func(_ context.Context, _ *ChainA, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		usage <- md.UsageInstructions
		return nil, nil
	}), "helper")
	helper := listenerOf(t, "helper", func(context.Context, *ChainC, xmlpipe.Metadata) (xmlpipe.Response, error) { return nil, nil })
	p := startPump(t, pump.Options{}, planner, helper)
	out := newRecorder()
	mustSend(t, p, client, "planner", &ChainA{Text: "before"}, out)
	if u := recv(t, usage); !strings.Contains(u, "<ChainC>") {
		t.Fatalf("usage lacks helper's schema:\n%s", u)
	}
	out.waitFor(t, "the first conversation to end", kind(pump.EventComplete))

	changed := listenerOf(t, "helper", func(context.Context, *ChainB, xmlpipe.Metadata) (xmlpipe.Response, error) { return nil, nil })
	if _, err := p.Change(pump.ListenerChange{Remove: []string{"helper"}, Add: []pump.Listener{changed}}); err != nil {
		t.Fatal(err)
	}
	p.RebuildPeers("HELPER", "unrelated")
	out = newRecorder()
	mustSend(t, p, client, "planner", &ChainA{Text: "after"}, out)
	if u := recv(t, usage); !strings.Contains(u, "<ChainB>") || strings.Contains(u, "<ChainC>") {
		t.Fatalf("usage after helper's contract changed:\n%s", u)
	}
}
