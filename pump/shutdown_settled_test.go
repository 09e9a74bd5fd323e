package pump_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestShutdownCutsASettledHandling: a graceful Shutdown never loses the
// answer of a settled handling — parked (halted, settled, slower than
// CancelGrace) or plainly running. Returned within the drain, its answer
// is sent and its message marked delivered; returned after the drain timed
// out, when its outputs can no longer be processed, its message is left
// undelivered (Recover re-delivers it on the next start) and nothing of it
// is dead-lettered, and a message still queued behind it is not handled.
func TestShutdownCutsASettledHandling(t *testing.T) {
	cases := []struct {
		name   string
		halted bool
		inTime bool // the handler returns within the drain
	}{
		{name: "parked, returns after the drain", halted: true},
		{name: "running, returns after the drain"},
		{name: "parked, returns within the drain", halted: true, inTime: true},
		{name: "running, returns within the drain", inTime: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := newMarkJournal()
			running := make(chan struct{}, 2)
			release := newGate()
			t.Cleanup(release.open)
			returned := make(chan struct{}, 2)
			thinker := agent(listenerOf(t, "thinker", func(ctx context.Context, in *Job, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
				xmlpipe.Settle(ctx, true) // the answer is recorded: it must not be lost
				running <- struct{}{}
				release.wait(t.Context()) // slower than the grace (and the drain)
				defer func() { returned <- struct{}{} }()
				return xmlpipe.Respond(&Ping{Text: "answered " + in.Label}), nil
			}))
			thinker.Workers = 1
			drain := 200 * time.Millisecond
			if tc.inTime {
				drain = waitTimeout
			}
			gaveUp := &logSignal{msg: "drain timed out", seen: make(chan struct{})}
			p := newPump(t, pump.Options{Journal: j, CancelGrace: 20 * time.Millisecond, ShutdownTimeout: drain,
				Logger: slog.New(gaveUp)}, thinker)
			if err := p.Start(); err != nil {
				t.Fatal(err)
			}
			out := newRecorder()
			mustSend(t, p, client, "thinker", &Job{Label: "deep"}, out)
			select {
			case <-running:
			case <-time.After(waitTimeout):
				t.Fatal("the call did not start")
			}
			if tc.halted {
				if rep, err := p.Halt(pump.HaltAgents); err != nil || rep.Cancelled != 1 {
					t.Fatalf("Halt = %+v, %v; want 1 cancelled", rep, err)
				}
				poll(t, "the handler given up on after the grace", func() bool { return p.Stats().Abandoned == 1 })
			} else {
				mustSend(t, p, client, "thinker", &Job{Label: "queued"}, out) // waits behind the running one
			}
			stopped := make(chan error, 1)
			go func() { stopped <- p.Shutdown(context.Background()) }()
			switch {
			case tc.inTime:
				release.open()
				if err := <-stopped; err != nil {
					t.Fatalf("Shutdown = %v", err)
				}
			case tc.halted: // a parked call holds no worker: Shutdown returns
				err := <-stopped
				if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "1 messages still in flight") {
					t.Fatalf("Shutdown = %v, want the drain's timeout naming the parked message", err)
				}
				release.open()
			default: // Shutdown waits for the running handler's worker
				select {
				case <-gaveUp.seen:
				case <-time.After(waitTimeout):
					t.Fatal("Shutdown did not report its drain's timeout")
				}
				release.open()
				if err := <-stopped; !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("Shutdown = %v, want the drain's timeout", err)
				}
			}
			<-returned
			poll(t, "nothing in flight", func() bool { return p.InFlight() == 0 })
			want := map[string]bool{"deep": tc.inTime}
			if !tc.halted {
				want["queued"] = tc.inTime
			}
			got := map[string]bool{}
			for text := range want {
				journaled, delivered := j.deliveredText(text)
				if !journaled {
					t.Errorf("%s: not journaled", text)
				}
				got[text] = delivered
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("messages marked delivered (-want +got):\n%s", diff)
			}
			wantAnswers := 0
			if tc.inTime {
				wantAnswers = len(want)
			}
			if n := out.count(kind(pump.EventReply)); n != wantAnswers {
				t.Errorf("%d answers, want %d", n, wantAnswers)
			}
			if n := len(returned); !tc.inTime && n != 0 {
				t.Errorf("the queued message was handled after the drain timed out")
			}
			if diff := cmp.Diff(0, j.kinds()[pump.RecordDeadLetter]); diff != "" {
				t.Errorf("dead letters journaled (-want +got):\n%s", diff)
			}
		})
	}
}

// logSignal is a slog handler that closes seen at the first record whose
// message contains msg.
type logSignal struct {
	msg  string
	seen chan struct{}
	once sync.Once
}

func (h *logSignal) Enabled(context.Context, slog.Level) bool { return true }
func (h *logSignal) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.msg) {
		h.once.Do(func() { close(h.seen) })
	}
	return nil
}
func (h *logSignal) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logSignal) WithGroup(string) slog.Handler      { return h }
