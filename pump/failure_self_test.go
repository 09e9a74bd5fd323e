package pump_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// errLoopGaveUp is loop's failure on its deepest self-iteration.
var errLoopGaveUp = errors.New("loop gave up")

// TestSelfSentFailureToldToTheCaller: loop sends itself a message twice
// (self-iteration: its work for its caller goes on on its own threads)
// and its handler fails on the last level. The failure goes to the party
// loop was working for — the listener that called it (its error handler,
// on the thread its call went from), or an outside asker (an AskError
// whose cause is the handler's error) — as for a callee that fails without
// self-iterating; loop's own error handler is told nothing.
func TestSelfSentFailureToldToTheCaller(t *testing.T) {
	selfTold := make(chan *xmlpipe.DeliveryError, 4)
	loop := withErrorHandler(listenerOf(t, "loop", func(_ context.Context, in *Bounce, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		switch in.Text {
		case "go":
			return xmlpipe.Send("loop", &Bounce{Text: "again"}), nil
		case "again":
			return xmlpipe.Send("loop", &Bounce{Text: "last"}), nil
		}
		return nil, errLoopGaveUp
	}), func(_ context.Context, de *xmlpipe.DeliveryError, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		selfTold <- de
		return nil, nil
	})
	type told struct {
		thread string
		de     *xmlpipe.DeliveryError
	}
	callerTold := make(chan told, 4)
	callerThread := make(chan string, 1)
	caller := withErrorHandler(listenerOf(t, "caller", func(_ context.Context, _ *Ping, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		callerThread <- md.ThreadID
		return xmlpipe.Send("loop", &Bounce{Text: "go"}), nil
	}), func(_ context.Context, de *xmlpipe.DeliveryError, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		callerTold <- told{md.ThreadID, de}
		return nil, nil
	})
	p := startPump(t, pump.Options{}, loop, caller)

	t.Run("a listener calls", func(t *testing.T) {
		out := newRecorder()
		mustSend(t, p, client, "caller", &Ping{Text: "start"}, out)
		thread := <-callerThread
		select {
		case got := <-callerTold:
			if got.thread != thread || got.de.Huh == nil || !strings.Contains(got.de.Detail, errLoopGaveUp.Error()) {
				t.Errorf("caller was told %+v on %s; want loop's failure (%v) on %s", got.de, got.thread, errLoopGaveUp, thread)
			}
		case de := <-selfTold:
			t.Fatalf("loop was told its own failure: %+v", de)
		case <-waitCtx(t).Done():
			t.Fatal("caller was never told that loop failed")
		}
		out.waitFor(t, "completion", kind(pump.EventComplete))
	})
	t.Run("an outside party asks", func(t *testing.T) {
		ev, err := p.Ask(waitCtx(t), client, "loop", &Bounce{Text: "go"})
		var ae *pump.AskError
		if !errors.As(err, &ae) || !errors.Is(err, errLoopGaveUp) || ae.Event.To != client {
			t.Fatalf("Ask = %+v, %v; want an AskError sent to %s caused by %v", ev, err, client, errLoopGaveUp)
		}
		if !stage.IsThreadID(ae.Event.Thread) || ae.Event.Thread != ae.Event.Conversation {
			t.Errorf("the failure was told on %s, want the conversation's thread %s", ae.Event.Thread, ae.Event.Conversation)
		}
	})
	select {
	case de := <-selfTold:
		t.Errorf("loop was told its own failure: %+v", de)
	default:
	}
}
