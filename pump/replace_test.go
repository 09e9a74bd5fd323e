package pump_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestChangeReplacesInOneSnapshot: a change that replaces a listener (same
// name, new handler) while a conversation pinned the old one: the pinned
// conversation's next message reaches the old version, a new conversation
// the new one, with no moment in which the name is unknown; the retired
// channel closes once the pinned conversation is done.
func TestChangeReplacesInOneSnapshot(t *testing.T) {
	rec := newRecorder()
	p, pr, g := pinnedRelay(t, rec)

	v2 := listenerOf(t, "target", func(_ context.Context, q *Pong, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		pr.record("target v2", q, md)
		return nil, nil
	})
	retired, err := p.Change(pump.ListenerChange{Remove: []string{"target"}, Add: []pump.Listener{v2}})
	if err != nil {
		t.Fatal(err)
	}
	mustSend(t, p, client, "target", &Pong{Text: "new"}, nil)
	if c := pr.next(t); c.Listener != "target v2" || c.Payload.(*Pong).Text != "new" {
		t.Fatalf("a new conversation reached %s with %+v, want target v2", c.Listener, c.Payload)
	}
	select {
	case <-retired["target"]:
		t.Fatal("the old version retired while a conversation pinned it")
	default:
	}
	g.open()
	if c := pr.next(t); c.Listener != "target" || c.Payload.(*Pong).Text != "pinned" {
		t.Fatalf("the pinned conversation reached %s with %+v, want the old target", c.Listener, c.Payload)
	}
	rec.waitFor(t, "the pinned conversation's completion", kind(pump.EventComplete))
	select {
	case <-retired["target"]:
	case <-waitCtx(t).Done():
		t.Fatal("the old version never retired")
	}
}

// TestChangeIsAllOrNothing: one listener that breaks the routing rules
// refuses the whole change; nothing of it is applied. The error names the
// listener once ("listener pings2: root tag collision: …"), as does the
// same refusal by AddListener.
func TestChangeIsAllOrNothing(t *testing.T) {
	pr := newProbe()
	p := startPump(t, pump.Options{}, sink[Ping](t, "pings", pr), sink[Pong](t, "pongs", pr))
	tests := []struct {
		name   string
		change pump.ListenerChange
		want   error
		who    string
	}{
		{"tag taken", pump.ListenerChange{Remove: []string{"pongs"},
			Add: []pump.Listener{sink[Job](t, "jobs", pr), sink[Ping](t, "pings2", pr)}}, pump.ErrTagCollision, "pings2"},
		{"unknown removal", pump.ListenerChange{Remove: []string{"pongs", "nobody"},
			Add: []pump.Listener{sink[Job](t, "jobs", pr)}}, pump.ErrUnknownListener, "nobody"},
		{"system name", pump.ListenerChange{Add: []pump.Listener{sink[Job](t, "system.jobs", pr)}}, pump.ErrReservedName, "system.jobs"},
		{"duplicate", pump.ListenerChange{Add: []pump.Listener{sink[Job](t, "PINGS", pr)}}, pump.ErrDuplicateName, "PINGS"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := p.Change(tc.change)
			var ce *pump.ChangeError
			if !errors.Is(err, tc.want) || !errors.As(err, &ce) || ce.Listener != tc.who {
				t.Fatalf("Change = %v, want %v about %s", err, tc.want, tc.who)
			}
			if n := strings.Count(err.Error(), tc.who); n != 1 || !strings.HasPrefix(err.Error(), "listener "+tc.who+": ") {
				t.Errorf("Change = %q: names %s %d times, want once, first", err, tc.who, n)
			}
			for _, l := range tc.change.Add {
				if l.Name != tc.who {
					continue
				}
				err := p.AddListener(l)
				if n := strings.Count(fmt.Sprint(err), l.Name); !errors.Is(err, tc.want) || n != 1 {
					t.Errorf("AddListener(%s) = %v: names it %d times, want once", l.Name, err, n)
				}
			}
			for _, name := range []string{"pings", "pongs"} {
				if _, ok := p.Lookup(name); !ok {
					t.Errorf("%s is gone after a refused change", name)
				}
			}
			if _, ok := p.Lookup("jobs"); ok {
				t.Error("jobs was added by a refused change")
			}
		})
	}
	// The listeners still work.
	mustSend(t, p, client, "pongs", &Pong{Text: "still here"}, nil)
	if c := pr.next(t); c.Listener != "pongs" {
		t.Fatalf("handled by %s", c.Listener)
	}
}

// TestChangeMovesTagAndKeepsOthers: a root tag passes from a removed
// listener to an added one in one change; a listener the change does not
// name keeps running its handler undisturbed; a replaced paused listener
// stays paused.
func TestChangeMovesTagAndKeepsOthers(t *testing.T) {
	pr := newProbe()
	g := newGate()
	running := make(chan struct{}, 1)
	busy := listenerOf(t, "busy", func(ctx context.Context, _ *Slow, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		running <- struct{}{}
		g.wait(ctx)
		return nil, nil
	})
	p := startPump(t, pump.Options{}, busy, sink[Ping](t, "old", pr), sink[Pong](t, "paused", pr))
	t.Cleanup(g.open)
	if err := p.Pause("paused"); err != nil {
		t.Fatal(err)
	}
	mustSend(t, p, client, "busy", &Slow{Text: "x"}, nil)
	<-running
	retired, err := p.Change(pump.ListenerChange{Remove: []string{"old", "paused"},
		Add: []pump.Listener{sink[Ping](t, "new", pr), sink[Pong](t, "paused", pr)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := injectErr(t, p, envelope(client, "", stage.NewThreadID(), `<Ping xmlns=""><Text>tag</Text></Ping>`), nil); err != nil {
		t.Fatal(err)
	}
	if c := pr.next(t); c.Listener != "new" {
		t.Fatalf("<Ping> reached %s, want new", c.Listener)
	}
	if !p.Paused("paused") {
		t.Error("the replacement of a paused listener is not paused")
	}
	for _, l := range p.Listeners() {
		if l.Name == "busy" && l.Active != 1 {
			t.Errorf("busy's running handler was disturbed: active %d", l.Active)
		}
	}
	// busy's conversation pinned the table that holds old: old retires
	// once it completes.
	select {
	case <-retired["old"]:
		t.Fatal("old retired while a conversation pinned its table")
	default:
	}
	g.open()
	select {
	case <-retired["old"]:
	case <-waitCtx(t).Done():
		t.Fatal("old never retired")
	}
}

// TestChangeBeforeStart: before Start a change edits the table; the
// workers start with the pump.
func TestChangeBeforeStart(t *testing.T) {
	pr := newProbe()
	p := newPump(t, pump.Options{}, sink[Ping](t, "old", pr))
	retired, err := p.Change(pump.ListenerChange{Remove: []string{"old"}, Add: []pump.Listener{sink[Ping](t, "new", pr)}})
	if err != nil {
		t.Fatal(err)
	}
	<-retired["old"]
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(context.Background())
	mustSend(t, p, client, "new", &Ping{Text: "hi"}, nil)
	if c := pr.next(t); c.Listener != "new" {
		t.Fatalf("handled by %s", c.Listener)
	}
}

// TestPauseReachesReplacedVersions: Pause and Resume of a name reach the
// version a change replaced while a conversation still pins it, so the
// pinned conversation's next message is neither handled while the name is
// paused nor left in a paused queue that Resume cannot reach; the
// introspection of the name counts the message waiting there.
func TestPauseReachesReplacedVersions(t *testing.T) {
	tests := []struct {
		name string
		// pauseFirst pauses target before the change (the new version
		// inherits the pause), else after it.
		pauseFirst bool
	}{
		{"paused before the change", true},
		{"paused after the change", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, pr, g := pinnedRelay(t, nil)

			if tc.pauseFirst {
				if err := p.Pause("target"); err != nil {
					t.Fatal(err)
				}
			}
			v2 := sink[Pong](t, "target v2", pr)
			v2.Name = "target"
			if _, err := p.Change(pump.ListenerChange{Remove: []string{"target"}, Add: []pump.Listener{v2}}); err != nil {
				t.Fatal(err)
			}
			if !tc.pauseFirst {
				if err := p.Pause("TARGET"); err != nil {
					t.Fatal(err)
				}
			}
			g.open()
			poll(t, "the pinned message queued at the old version", func() bool {
				return listenerInfo(t, p, "target").QueueDepth == 1
			})
			if got := pr.all(); len(got) != 0 {
				t.Fatalf("a paused target handled %+v", got[0].Payload)
			}
			if err := p.Resume("target"); err != nil {
				t.Fatal(err)
			}
			c := pr.next(t)
			if diff := cmp.Diff(call{Listener: "target", Payload: &Pong{Text: "pinned"}}, call{Listener: c.Listener, Payload: c.Payload}); diff != "" {
				t.Fatalf("after Resume (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRemovedPausedListenerFinishes: a paused listener removed without a
// replacement — by a change (a reload) or by RemoveListener (an OOB
// unregister) — no longer has a name Resume could reach, so its pause is
// lifted and the conversation that pinned it completes instead of waiting
// in its queue forever; the listener then retires.
func TestRemovedPausedListenerFinishes(t *testing.T) {
	tests := []struct {
		name string
		// remove takes target out and returns a channel closed once it
		// retired.
		remove func(t *testing.T, p *pump.Pump) <-chan struct{}
	}{
		{"change", func(t *testing.T, p *pump.Pump) <-chan struct{} {
			retired, err := p.Change(pump.ListenerChange{Remove: []string{"target"}})
			if err != nil {
				t.Fatal(err)
			}
			return retired["target"]
		}},
		{"RemoveListener", func(t *testing.T, p *pump.Pump) <-chan struct{} {
			done := make(chan struct{})
			go func() {
				defer close(done)
				if err := p.RemoveListener(waitCtx(t), "target"); err != nil {
					t.Errorf("RemoveListener: %v", err)
				}
			}()
			return done
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder()
			p, pr, g := pinnedRelay(t, rec)
			if err := p.Pause("target"); err != nil {
				t.Fatal(err)
			}
			retired := tc.remove(t, p)
			g.open()
			c := pr.next(t)
			if diff := cmp.Diff(call{Listener: "target", Payload: &Pong{Text: "pinned"}}, call{Listener: c.Listener, Payload: c.Payload}); diff != "" {
				t.Fatalf("the pinned conversation's message (-want +got):\n%s", diff)
			}
			rec.waitFor(t, "the pinned conversation's completion", kind(pump.EventComplete))
			select {
			case <-retired:
			case <-waitCtx(t).Done():
				t.Fatal("the removed listener never retired")
			}
		})
	}
}
