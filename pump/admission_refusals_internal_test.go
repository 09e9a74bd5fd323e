package pump

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// refusalLines is a slog handler keeping the "messages refused: busy"
// lines: listener → the refused counts of its lines, in order; each line
// is also sent to lines (when set).
type refusalLines struct {
	mu    sync.Mutex
	got   map[string][]int64
	lines chan struct{}
}

func (h *refusalLines) Enabled(context.Context, slog.Level) bool { return true }
func (h *refusalLines) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *refusalLines) WithGroup(string) slog.Handler            { return h }
func (h *refusalLines) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "messages refused: busy" {
		return nil
	}
	var listener string
	var n int64
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "listener":
			listener = a.Value.String()
		case "refused":
			n = a.Value.Int64()
		}
		return true
	})
	h.mu.Lock()
	h.got[listener] = append(h.got[listener], n)
	h.mu.Unlock()
	if h.lines != nil {
		h.lines <- struct{}{}
	}
	return nil
}

// counts returns a copy of the lines' counts.
func (h *refusalLines) counts() map[string][]int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string][]int64{}
	for k, v := range h.got {
		out[k] = append([]int64(nil), v...)
	}
	return out
}

// TestRefusalLogIsRateLimited: a flood of busy refusals from many senders
// at once is logged as one line per listener at its first refusal, then
// one line per interval with the count since (the last at shutdown) —
// every refusal is in some line, far fewer lines than refusals — and the
// counts per listener and reason are exact.
func TestRefusalLogIsRateLimited(t *testing.T) {
	const senders, each = 8, 500
	tests := []struct {
		name  string
		every time.Duration
		// most is the most lines the flood may take.
		most int
		// settle waits for the lines the flood is owed (the timer's).
		settle func(t *testing.T, p *Pump, h *refusalLines)
	}{
		{"within one interval: the rest at shutdown", time.Hour, 2, func(t *testing.T, p *Pump, _ *refusalLines) {
			p.refused.stop()
		}},
		{"over intervals: the rest once the interval ends", 20 * time.Millisecond, senders * each / 10, func(t *testing.T, _ *Pump, h *refusalLines) {
			deadline := time.After(60 * time.Second)
			for {
				var sum int64
				for _, n := range h.counts()["worker"] {
					sum += n
				}
				if sum == senders*each {
					return
				}
				select {
				case <-h.lines:
				case <-deadline:
					t.Fatalf("logged %d of %d refusals", sum, senders*each)
				}
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := &refusalLines{got: map[string][]int64{}, lines: make(chan struct{}, senders*each+4)}
			p, err := New(Options{Logger: slog.New(h)})
			if err != nil {
				t.Fatal(err)
			}
			p.refused.every = tc.every
			l := newTestListener("worker")
			var wg sync.WaitGroup
			for s := range senders {
				wg.Go(func() {
					for i := range each {
						err := error(&BusyError{Reason: "listener worker busy", kind: kindShare})
						if (s+i)%2 == 0 {
							err = &BusyError{Reason: "listener worker busy: about 9s of work queued", kind: kindQueueWait}
						}
						p.countRefusal(l, err)
						p.countRefusal(l, errors.New("not busy")) // not counted
					}
				})
			}
			p.countRefusal(nil, p.busy(kindBudget, "in-flight budget full", nil))
			wg.Wait()
			tc.settle(t, p, h)
			got := h.counts()
			lines := got["worker"]
			var sum int64
			for _, n := range lines {
				sum += n
			}
			// The first line comes at the first refusal, with what was
			// counted by then; every refusal is in one line.
			if sum != senders*each || len(lines) > tc.most {
				t.Errorf("worker's lines %v: want at most %d, %d refusals in all", lines, tc.most, senders*each)
			}
			want := []RefusalCount{
				{Listener: "", Reason: RefusedBudget, Count: 1},
				{Listener: "worker", Reason: RefusedQueueWait, Count: senders * each / 2},
				{Listener: "worker", Reason: RefusedShare, Count: senders * each / 2},
			}
			if diff := cmp.Diff(want, p.Refusals()); diff != "" {
				t.Errorf("Refusals (-want +got):\n%s", diff)
			}
			p.refused.stop()
		})
	}
}
