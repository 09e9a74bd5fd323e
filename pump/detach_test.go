package pump_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestDetachFreesTheWorker: a Remote listener with one worker whose
// handlings detach (pump.Detach) once they only wait runs every message
// at once, not one after the other; a detached handling is still listed as
// running, a Kill of its conversation still cancels it (its answer
// dropped), and the others' answers are processed as ever.
func TestDetachFreesTheWorker(t *testing.T) {
	const n = 4
	release := newGate()
	type started struct {
		thread   string
		detached bool
	}
	starts := make(chan started, n)
	ends := make(chan ended, n)
	remote := listenerOf(t, "remote", func(ctx context.Context, in *News, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		starts <- started{thread: md.ThreadID, detached: pump.Detach(ctx)}
		if pump.Detach(ctx) {
			t.Error("a handling detached twice")
		}
		select {
		case <-ctx.Done():
			ends <- endOf(ctx, in.Headline)
			return nil, ctx.Err()
		case <-release.ch:
		case <-t.Context().Done():
		}
		return xmlpipe.Send("pings", &Ping{Text: in.Headline}), nil
	})
	remote.Remote, remote.Workers = true, 1
	pr := newProbe()
	p := startPump(t, pump.Options{}, remote, sink[Ping](t, "pings", pr))

	threads := map[string]string{} // the conversation by headline
	var running []string
	for i := range n {
		headline := string(rune('a' + i))
		conv, err := injectErr(t, p, envelope(client, "", stage.NewThreadID(),
			`<News xmlns=""><Headline>`+headline+`</Headline></News>`), newRecorder())
		if err != nil {
			t.Fatal(err)
		}
		threads[headline] = conv
		// Each handling starts while every earlier one still waits: the
		// worker was freed by the detach.
		s := recv(t, starts)
		if !s.detached {
			t.Fatalf("handling %d: Detach reported false for a Remote listener", i)
		}
		running = append(running, s.thread)
	}
	var listed []string
	for _, info := range p.Listeners() {
		if info.Name == "remote" {
			listed = info.Current
		}
	}
	slices.Sort(listed)
	slices.Sort(running)
	if diff := cmp.Diff(running, listed); diff != "" {
		t.Errorf("the running handlings listed (-want +got):\n%s", diff)
	}

	if _, err := p.Kill(threads["a"]); err != nil {
		t.Fatal(err)
	}
	if e := waitEnded(t, ends); e.label != "a" || !errors.Is(e.cause, pump.ErrConversationKilled) {
		t.Fatalf("killed handling ended %+v, want a cancelled with ErrConversationKilled", e)
	}
	release.open()
	var got []string
	for range n - 1 {
		got = append(got, pr.next(t).Payload.(*Ping).Text)
	}
	slices.Sort(got)
	if diff := cmp.Diff([]string{"b", "c", "d"}, got); diff != "" {
		t.Errorf("the answers processed (-want +got):\n%s", diff)
	}
}

// TestDetachOnlyRemote: a listener that is not Remote holds a handler slot
// while it runs; its handler cannot detach.
func TestDetachOnlyRemote(t *testing.T) {
	got := make(chan bool, 1)
	l := listenerOf(t, "local", func(ctx context.Context, _ *News, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		got <- pump.Detach(ctx)
		return nil, nil
	})
	p := startPump(t, pump.Options{}, l)
	if _, err := injectErr(t, p, envelope(client, "", stage.NewThreadID(), `<News xmlns=""><Headline>x</Headline></News>`),
		newRecorder()); err != nil {
		t.Fatal(err)
	}
	if recv(t, got) {
		t.Error("Detach reported true for a listener that is not Remote")
	}
	if pump.Detach(context.Background()) {
		t.Error("Detach reported true for a context the pump did not give a handler")
	}
}

// TestAbandonDetachedHandler: a detached handling that ignores its
// cancelled context (its timeout fired) is abandoned after CancelGrace as
// any other — the sender gets its <huh> — but it held no worker's place,
// so none is started for it: when it finally returns, the listener still
// has its one worker, and the pump shuts down cleanly.
func TestAbandonDetachedHandler(t *testing.T) {
	stuck := newGate()
	t.Cleanup(stuck.open)
	returned := make(chan struct{})
	l := listenerOf(t, "remote", func(ctx context.Context, in *Job, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		if !pump.Detach(ctx) {
			t.Error("Detach reported false for a Remote listener")
		}
		if in.Label == "stuck" {
			stuck.wait(t.Context()) // ignores ctx
			defer close(returned)
			return xmlpipe.Respond(&Ping{Text: "from the stuck handler"}), nil
		}
		return xmlpipe.Respond(&Ping{Text: "ok"}), nil
	})
	l.Remote, l.Workers, l.Timeout = true, 1, 50*time.Millisecond
	p := startPump(t, pump.Options{CancelGrace: 50 * time.Millisecond}, l)
	stuckOut := newRecorder()
	mustSend(t, p, client, "remote", &Job{Label: "stuck"}, stuckOut)
	stuckOut.waitFor(t, "the stuck call's <huh>", kind(pump.EventHuh))
	if li := listenerInfo(t, p, "remote"); li.Lingering != 1 || len(li.Current) != 0 {
		t.Errorf("while the handler is stuck: lingering %d, current %v; want 1, none", li.Lingering, li.Current)
	}
	stuck.open()
	<-returned
	poll(t, "the abandoned handler to be counted as returned", func() bool { return listenerInfo(t, p, "remote").Lingering == 0 })
	for i := range 3 {
		out := newRecorder()
		mustSend(t, p, client, "remote", &Job{Label: "next"}, out)
		if r := out.waitFor(t, "the next answer", kind(pump.EventReply)); r.Payload.(*Ping).Text != "ok" {
			t.Errorf("reply %d: %+v", i, r.Payload)
		}
	}
	if n := stuckOut.count(kind(pump.EventReply)); n != 0 {
		t.Errorf("the abandoned handler's answer reached its sender (%d replies)", n)
	}
	poll(t, "nothing in flight", func() bool { return p.InFlight() == 0 })
}
