package pump_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestBlockedListenerLeavesSlots: twenty handlers of one listener blocked
// for good (like twenty reads of a FIFO nobody writes, which no context
// interrupts, and no timeout) hold at most half of the twenty global
// handler slots, so another listener still answers; once they are released,
// the rest of the blocked listener's messages run too.
func TestBlockedListenerLeavesSlots(t *testing.T) {
	release := newGate()
	t.Cleanup(release.open)
	var inside, peak atomic.Int64
	entered := make(chan struct{}, 32)
	files := listenerOf(t, "files", func(_ context.Context, in *Job, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		updateMax(&peak, inside.Add(1))
		entered <- struct{}{}
		release.wait(t.Context()) // ignores its context
		inside.Add(-1)
		return xmlpipe.Respond(&Ping{Text: in.Label}), nil
	})
	files.Workers, files.Timeout = 20, -1 // no deadline: fairness alone must do it
	calculate := listenerOf(t, "calculate", func(_ context.Context, in *Ping, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		return xmlpipe.Respond(&Ping{Text: "= " + in.Text}), nil
	})
	p := startPump(t, pump.Options{MaxConcurrentHandlers: 20}, files, calculate)
	outs := make([]*recorder, 20)
	for i := range outs {
		outs[i] = newRecorder()
		mustSend(t, p, client, "files", &Job{Label: fmt.Sprint(i)}, outs[i])
	}
	for range 10 {
		<-entered
	}
	poll(t, "the blocked listener's workers waiting for slots", func() bool { return queueDepth(p, "files") == 0 })
	for i := range 3 {
		out := newRecorder()
		mustSend(t, p, client, "calculate", &Ping{Text: fmt.Sprint(i)}, out)
		if r := out.waitFor(t, "calculate's answer", kind(pump.EventReply)); r.Payload.(*Ping).Text != fmt.Sprintf("= %d", i) {
			t.Fatalf("calculate answered %+v", r.Payload)
		}
	}
	if got, li := peak.Load(), listenerInfo(t, p, "files"); got != 10 || li.SlotsHeld != 10 {
		t.Fatalf("blocked listener: peak %d running, %d slots held; want 10 (half the slots)", got, li.SlotsHeld)
	}
	release.open()
	for _, o := range outs {
		o.waitFor(t, "every blocked message answered", kind(pump.EventReply))
	}
}
