package bench

import (
	"testing"
	"time"
)

// TestProbeRecordsOnlyItsWindow: conversations outside the probe's window are
// ignored, a hop is recorded only after the event that starts it, and the
// latencies come back sorted.
func TestProbeRecordsOnlyItsWindow(t *testing.T) {
	p := newProbe(10, 3) // seqs 10, 11, 12
	for _, seq := range []int64{9, 13, -1} {
		if i := p.slot(seq); i != -1 {
			t.Fatalf("slot(%d) = %d, want -1", seq, i)
		}
	}
	var nilProbe *probe
	nilProbe.injected(10) // the bench calls it outside the latency phase

	p.injected(10)
	p.shouting(10)
	p.shouted(10)
	p.sunk(10)
	p.shouting(11) // never injected: no hop 1
	p.sunk(12)     // never shouted: no hop 2
	p.injected(13) // outside the window
	got := p.latencies()
	if len(got) != 2 {
		t.Fatalf("latencies = %v, want 2 (both hops of seq 10)", got)
	}
	if got[0] <= 0 || got[0] > got[1] || got[1] > time.Second {
		t.Fatalf("latencies not positive and sorted: %v", got)
	}
}
