package pump_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestCancelThenContinueWhileTheCancelledCallDrains: the owner continues a
// conversation whose answer was just cancelled while the cancelled
// handler has not returned yet (a tool killing and reaping its program).
// The continuation is accepted and held, not dropped with the cancelled
// work; it runs once the cancelled turn completed — never beside the
// cancelled call — and is answered; the cancelled call's answer is dropped.
func TestCancelThenContinueWhileTheCancelledCallDrains(t *testing.T) {
	entered, cancelled, release := newGate(), newGate(), newGate()
	var oneReturned, overlapped atomic.Bool
	chat := listenerOf(t, "chat", func(ctx context.Context, in *Bounce, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		if in.Text != "one" {
			if !oneReturned.Load() {
				overlapped.Store(true)
			}
			return xmlpipe.Respond(&Bounce{Text: in.Text + " answered"}), nil
		}
		entered.open()
		<-ctx.Done()
		if errors.Is(context.Cause(ctx), pump.ErrCancelled) {
			cancelled.open()
		}
		release.wait(context.Background())
		oneReturned.Store(true)
		return xmlpipe.Respond(&Bounce{Text: "one answered"}), nil
	})
	p := startPump(t, pump.Options{Journal: newMarkJournal()}, chat)
	all := newRecorder()
	defer p.Subscribe(all)()
	first := newRecorder()
	conv := mustSend(t, p, client, "chat", &Bounce{Text: "one"}, first)
	entered.wait(waitCtx(t))
	if _, err := p.Cancel(conv); err != nil {
		t.Fatal(err)
	}
	if !cancelled.wait(waitCtx(t)) {
		t.Fatal("the running call was not cancelled with ErrCancelled")
	}

	next := newRecorder()
	if _, err := injectErr(t, p, envelope(client, "chat", conv, `<Bounce xmlns=""><Text>two</Text></Bounce>`), next); err != nil {
		t.Fatalf("continuing while the cancelled call drains: %v, want it accepted", err)
	}
	release.open()

	reply := next.waitFor(t, "the continuation's answer", kind(pump.EventReply))
	if b, ok := reply.Payload.(*Bounce); !ok || b.Text != "two answered" {
		t.Errorf("the continuation was answered %+v, want two answered", reply.Payload)
	}
	if done := next.waitFor(t, "the continuation's completion", kind(pump.EventComplete)); done.Error != "" {
		t.Errorf("the continuation completed with %q, want no error", done.Error)
	}
	if done := first.waitFor(t, "the cancelled turn's completion", kind(pump.EventComplete)); done.Error != pump.CancelledReason {
		t.Errorf("the cancelled turn completed with %q, want %q", done.Error, pump.CancelledReason)
	}
	all.waitFor(t, "the cancelled call's answer dropped", func(e pump.Event) bool {
		return e.Kind == pump.EventDeadLetter && e.Error == pump.CancelledReason+": the handler's answer is dropped"
	})
	if overlapped.Load() {
		t.Error("the continuation ran before the cancelled call returned")
	}
	for _, e := range first.snapshot() {
		if e.Kind == pump.EventReply {
			t.Errorf("the cancelled turn's answer reached its sender: %+v", e.Payload)
		}
	}
}
