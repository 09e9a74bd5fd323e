package pump_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestBlockedListenerLeavesSlots: twenty handlers of one listener blocked
// in reads of a FIFO nobody writes (an open(2) no context interrupts, and no
// timeout) hold at most half of the twenty global handler slots, so
// another listener still answers; once the FIFO is fed, the rest of the
// blocked listener's messages run too.
func TestBlockedListenerLeavesSlots(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	var inside, peak, done atomic.Int64
	files := listenerOf(t, "files", func(_ context.Context, in *Job, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		updateMax(&peak, inside.Add(1))
		defer inside.Add(-1)
		defer done.Add(1)
		f, err := os.Open(fifo) // blocks until a writer opens it
		if err != nil {
			return nil, err
		}
		defer f.Close()
		b, err := io.ReadAll(f)
		return xmlpipe.Respond(&Ping{Text: in.Label + string(b)}), err
	})
	files.Workers, files.Timeout = 20, -1 // no deadline: fairness alone must do it
	calculate := listenerOf(t, "calculate", func(_ context.Context, in *Ping, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		return xmlpipe.Respond(&Ping{Text: "= " + in.Text}), nil
	})
	p := startPump(t, pump.Options{MaxConcurrentHandlers: 20}, files, calculate)
	// feed opens the FIFO as a writer until the blocked readers are all
	// done (an O_RDWR open never blocks; each wakes the readers blocked
	// in open, which then read to the end).
	feed := func() {
		deadline := time.Now().Add(waitTimeout)
		for done.Load() < 20 && time.Now().Before(deadline) {
			w, err := os.OpenFile(fifo, os.O_RDWR, 0)
			if err != nil {
				t.Errorf("open the FIFO to write: %v", err)
				return
			}
			w.Close()
			time.Sleep(time.Millisecond)
		}
	}
	t.Cleanup(feed) // before the pump's drain, whatever happens
	outs := make([]*recorder, 20)
	for i := range outs {
		outs[i] = newRecorder()
		mustSend(t, p, client, "files", &Job{Label: fmt.Sprint(i)}, outs[i])
	}
	// The ten waiting for slots were taken from the queue by workers, and
	// still count in its depth: they wait.
	poll(t, "ten readers blocked and the others waiting for slots", func() bool {
		return inside.Load() == 10 && queueDepth(p, "files") == 10
	})
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
	feed()
	for _, o := range outs {
		o.waitFor(t, "every blocked read answered", kind(pump.EventReply))
	}
}
