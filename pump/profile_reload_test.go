package pump_test

import (
	"context"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestProfileContinuationKeepsItsTable: a conversation continued after a
// reload that widened its profile (a listener and an address added to the
// definition) reaches and dials no more than when it began (seed 000 §8.5:
// the dispatch table of a thread is fixed when it is created) — also once
// its first turn has completed and the next message goes on its thread;
// a conversation begun after the reload gets the new definition.
func TestProfileContinuationKeepsItsTable(t *testing.T) {
	pr := newProbe()
	seen := make(chan xmlpipe.Metadata, 8)
	refused := make(chan *xmlpipe.DeliveryError, 8)
	relay := withErrorHandler(agent(listenerOf(t, "relay", func(_ context.Context, in *ChainA, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		seen <- md
		if in.Text == "hop" {
			return xmlpipe.Send("target", &ChainB{Text: in.Text}), nil
		}
		return xmlpipe.Respond(&Pong{Text: "ok"}), nil
	}), "target"), func(_ context.Context, de *xmlpipe.DeliveryError, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		refused <- de
		return nil, nil
	})
	p := profiled(t, []pump.ProfileDef{{Name: "p", Listeners: []string{"relay"}, Network: []string{}}},
		relay, sink[ChainB](t, "target", pr))
	wctx, cancel := context.WithTimeout(t.Context(), reloadWait)
	defer cancel()
	ctx := pump.WithProfile(wctx, "p")
	thread := stage.NewThreadID()
	turn := func(text string) {
		t.Helper()
		out := eventChan(make(chan pump.Event, 16))
		if _, err := p.InjectWait(ctx, envelope(client, "relay", thread, `<ChainA xmlns=""><Text>`+text+`</Text></ChainA>`), out); err != nil {
			t.Fatal(err)
		}
		for e := within(t, out); e.Kind != pump.EventComplete; e = within(t, out) {
		}
	}
	turn("stay")
	if md := within(t, seen); md.Profile == nil || md.Profile.Reaches("target") || md.Profile.MayDial("example.com:443") {
		t.Fatalf("first turn: profile %v", md.Profile)
	}

	// The reload widens p: target and example.com:443.
	if err := p.SetProfiles([]pump.ProfileDef{{Name: "p", Listeners: []string{"relay", "target"},
		Network: []string{"example.com:443"}}}); err != nil {
		t.Fatal(err)
	}
	turn("hop")
	md := within(t, seen)
	if md.Profile == nil || md.Profile.Reaches("target") || md.Profile.MayDial("example.com:443") {
		t.Errorf("continued conversation: its profile reaches target or dials example.com:443 (%v)", md.Profile)
	}
	// What it would dial through a new conversation (a callable's call) is
	// beyond it: the call is refused.
	if got := p.NetworkWidened(md.Profile); got != "p" {
		t.Errorf("NetworkWidened(continued conversation's profile) = %q, want p", got)
	}
	if de := within(t, refused); de == nil {
		t.Error("the forward to target was not refused")
	}
	if n := len(pr.all()); n != 0 {
		t.Fatalf("%d deliveries to target from the conversation begun before the reload", n)
	}

	// A conversation begun after the reload routes within the new table.
	out := newRecorder()
	if _, err := p.Send(ctx, client, "relay", &ChainA{Text: "hop"}, out); err != nil {
		t.Fatal(err)
	}
	if md := within(t, seen); md.Profile == nil || !md.Profile.Reaches("target") || !md.Profile.MayDial("example.com:443") {
		t.Errorf("new conversation: profile %v", md.Profile)
	}
	if c := within(t, pr.ch); c.Listener != "target" {
		t.Fatalf("new conversation: %+v", c)
	}
}

// reloadWait bounds each wait of the reload tests (a loaded machine).
const reloadWait = 60 * time.Second

// eventChan is an Outlet that passes each event on (dropping it when full).
type eventChan chan pump.Event

// Deliver implements pump.Outlet.
func (c eventChan) Deliver(e pump.Event) {
	select {
	case c <- e:
	default:
	}
}

// within receives from ch, failing the test after reloadWait.
func within[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(reloadWait):
		t.Fatalf("nothing received in %s", reloadWait)
		panic("unreachable")
	}
}

// TestProfileContinuationNarrowed: a reload that narrows a profile applies
// to a conversation begun before it at its next turn: never wider than
// when it began, and no wider than the definitions in force.
func TestProfileContinuationNarrowed(t *testing.T) {
	pr := newProbe()
	refused := make(chan *xmlpipe.DeliveryError, 8)
	relay := withErrorHandler(agent(listenerOf(t, "relay", func(_ context.Context, in *ChainA, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		if in.Text == "hop" {
			return xmlpipe.Send("target", &ChainB{Text: in.Text}), nil
		}
		return xmlpipe.Respond(&Pong{Text: "ok"}), nil
	}), "target"), func(_ context.Context, de *xmlpipe.DeliveryError, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		refused <- de
		return nil, nil
	})
	p := profiled(t, []pump.ProfileDef{{Name: "p", Listeners: []string{"relay", "target"}}}, relay, sink[ChainB](t, "target", pr))
	wctx, cancel := context.WithTimeout(t.Context(), reloadWait)
	defer cancel()
	ctx := pump.WithProfile(wctx, "p")
	thread := stage.NewThreadID()
	send := func(text string) eventChan {
		t.Helper()
		out := eventChan(make(chan pump.Event, 16))
		if _, err := p.InjectWait(ctx, envelope(client, "relay", thread, `<ChainA xmlns=""><Text>`+text+`</Text></ChainA>`), out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	out := send("hop")
	if c := within(t, pr.ch); c.Listener != "target" {
		t.Fatalf("first turn: %+v", c)
	}
	for e := within(t, out); e.Kind != pump.EventComplete; e = within(t, out) {
	}
	if err := p.SetProfiles([]pump.ProfileDef{{Name: "p", Listeners: []string{"relay"}}}); err != nil {
		t.Fatal(err)
	}
	send("hop")
	if de := within(t, refused); de == nil {
		t.Error("no refusal")
	}
	if n := len(pr.all()); n != 1 {
		t.Fatalf("%d deliveries to target, want 1 (the first turn's)", n)
	}
}
