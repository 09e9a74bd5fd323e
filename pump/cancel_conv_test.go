package pump_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestCancelKeepsTheConversation: Cancel stops the answer in flight of one
// conversation — its running handler's context is cancelled with cause
// ErrCancelled and what it returns is dropped, its message queued at a
// paused listener is dead-lettered ("answer cancelled") and marked
// delivered in the journal (recovery runs it not again) before Cancel
// returns, and the conversation completes saying so — but keeps it: the
// owner's next message on the same thread is accepted and runs, and a
// second Cancel once nothing is in flight reports the conversation ended.
func TestCancelKeepsTheConversation(t *testing.T) {
	entered := newGate()
	causes := make(chan error, 1)
	pr := newProbe()
	fan := listenerOf(t, "fan", func(_ context.Context, in *Fan, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		return xmlpipe.SendAll(&xmlpipe.SendResponse{To: "slow", Payload: &Job{Label: in.Step}},
			&xmlpipe.SendResponse{To: "jobs", Payload: &Slow{Text: in.Step + "-queued"}}), nil
	})
	slow := listenerOf(t, "slow", func(ctx context.Context, in *Job, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		if in.Label == "first" {
			entered.open()
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return xmlpipe.Send("pings", &Ping{Text: "too late"}), nil
		}
		return xmlpipe.Send("pings", &Ping{Text: "answered " + in.Label}), nil
	})
	j := newMarkJournal()
	p := startPump(t, pump.Options{Journal: j}, fan, slow, sink[Slow](t, "jobs", pr), sink[Ping](t, "pings", pr))
	if err := p.Pause("jobs"); err != nil {
		t.Fatal(err)
	}
	all := newRecorder()
	p.Subscribe(all)
	out := newRecorder()
	conv := mustSend(t, p, client, "fan", &Fan{Step: "first"}, out)
	entered.wait(waitCtx(t))
	all.waitFor(t, "the job queued at the paused listener", func(e pump.Event) bool {
		return e.Kind == pump.EventMessage && e.Listener == "jobs"
	})

	got, err := p.Cancel(conv)
	if err != nil || got != conv {
		t.Fatalf("Cancel = %q, %v; want %q, nil", got, err, conv)
	}
	type state struct {
		QueueDepth        int
		Journaled, Marked bool
	}
	st := state{QueueDepth: listenerInfo(t, p, "jobs").QueueDepth}
	st.Journaled, st.Marked = j.deliveredText("first-queued")
	if diff := cmp.Diff(state{Journaled: true, Marked: true}, st); diff != "" {
		t.Errorf("when Cancel returned (-want +got):\n%s", diff)
	}
	select {
	case cause := <-causes:
		if !errors.Is(cause, pump.ErrCancelled) || errors.Is(cause, pump.ErrConversationKilled) {
			t.Errorf("the running handler's cause = %v, want ErrCancelled (not a kill)", cause)
		}
	case <-waitCtx(t).Done():
		t.Fatal("the running handler was not cancelled")
	}
	all.waitFor(t, "the cancelled handler's answer dropped", func(e pump.Event) bool {
		return e.Kind == pump.EventDeadLetter && e.Error == pump.CancelledReason+": the handler's answer is dropped"
	})
	done := out.waitFor(t, "completion", kind(pump.EventComplete))
	if done.Error != pump.CancelledReason {
		t.Errorf("completion Error = %q, want %q", done.Error, pump.CancelledReason)
	}
	if _, err := p.Cancel(conv); !errors.Is(err, pump.ErrConversationEnded) {
		t.Errorf("Cancel of the completed conversation = %v, want ErrConversationEnded", err)
	}

	// The conversation goes on: the owner's next message on its thread runs.
	again := newRecorder()
	if _, err := injectErr(t, p, envelope(client, "slow", conv, `<Job xmlns=""><Label>second</Label></Job>`), again); err != nil {
		t.Fatalf("continuing the cancelled conversation: %v, want it accepted", err)
	}
	c := pr.next(t)
	if ping, ok := c.Payload.(*Ping); !ok || ping.Text != "answered second" {
		t.Fatalf("handled %+v, want the continuation's answer (the cancelled answer dropped)", c.Payload)
	}
	if err := p.Resume("jobs"); err != nil {
		t.Fatal(err)
	}
	again.waitFor(t, "the continuation's completion", kind(pump.EventComplete))
	if calls := pr.all(); len(calls) != 1 {
		t.Errorf("handled %d messages (%+v), want only the continuation's answer, nothing of the cancelled one",
			len(calls), calls)
	}
	if _, err := p.Kill(conv); !errors.Is(err, pump.ErrConversationEnded) {
		t.Errorf("Kill after the continuation completed = %v, want ErrConversationEnded", err)
	}
}

// TestCancelUnknown: a cancel names what it could not find, and one of a
// killed conversation has nothing to stop.
func TestCancelUnknown(t *testing.T) {
	entered := newGate()
	slow := listenerOf(t, "slow", func(ctx context.Context, _ *Job, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		entered.open()
		<-ctx.Done()
		return nil, nil
	})
	p := startPump(t, pump.Options{}, slow)
	if _, err := p.Cancel("6f1c2a3b-0000-4000-8000-000000000000"); !errors.Is(err, pump.ErrUnknownThread) {
		t.Errorf("Cancel(unknown) = %v, want ErrUnknownThread", err)
	}
	out := newRecorder()
	conv := sendJob(t, p, "slow", "x", out)
	entered.wait(waitCtx(t))
	if _, err := p.Kill(conv); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Cancel(conv); !errors.Is(err, pump.ErrConversationEnded) {
		t.Errorf("Cancel of a killed conversation = %v, want ErrConversationEnded", err)
	}
	if done := out.waitFor(t, "completion", kind(pump.EventComplete)); done.Error != pump.KilledReason {
		t.Errorf("completion Error = %q, want %q", done.Error, pump.KilledReason)
	}
}

// TestCancelMarksTheHistories: Cancel records its mark
// (xmlpipe.CancelMarkType) on every thread of the conversation with a
// history — the one of a handler waiting for an answer the cancel drops
// too, which is not running to see the cancel — before the cancel reaches
// the running handlers, so what they record of it follows the mark.
func TestCancelMarksTheHistories(t *testing.T) {
	entered := newGate()
	threads := make(chan string, 2)
	recorded := make(chan error, 1)
	var p *pump.Pump
	fan := listenerOf(t, "fan", func(_ context.Context, in *Fan, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		threads <- md.ThreadID
		return xmlpipe.Send("slow", &Job{Label: in.Step}), nil
	})
	slow := listenerOf(t, "slow", func(ctx context.Context, _ *Job, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		threads <- md.ThreadID
		entered.open()
		<-ctx.Done()
		_, err := p.Context().Append(registry.Slot{ThreadID: md.ThreadID, From: "slow", PayloadType: "note",
			Raw: []byte("stopped")})
		recorded <- err
		return nil, nil
	})
	p = startPump(t, pump.Options{}, fan, slow)
	out := newRecorder()
	conv := mustSend(t, p, client, "fan", &Fan{Step: "first"}, out)
	entered.wait(waitCtx(t))
	if _, err := p.Cancel(conv); err != nil {
		t.Fatal(err)
	}
	if err := <-recorded; err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, "completion", kind(pump.EventComplete))
	fanThread, slowThread := <-threads, <-threads
	type mark struct{ From, PayloadType, Raw string }
	tail := func(thread string, n int) []mark {
		tc, ok := p.Context().Thread(thread)
		if !ok {
			t.Fatalf("no history of thread %s", thread)
		}
		var out []mark
		slots := tc.Slots()
		for _, s := range slots[max(0, len(slots)-n):] {
			out = append(out, mark{s.From, s.PayloadType, string(s.Raw)})
		}
		return out
	}
	cancelled := mark{"", xmlpipe.CancelMarkType, pump.CancelledReason}
	if diff := cmp.Diff([]mark{cancelled}, tail(fanThread, 1)); fanThread != slowThread && diff != "" {
		t.Errorf("the waiting handler's history ends (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]mark{cancelled, {"slow", "note", "stopped"}}, tail(slowThread, 2)); diff != "" {
		t.Errorf("the running handler's history ends (-want +got):\n%s", diff)
	}
}
