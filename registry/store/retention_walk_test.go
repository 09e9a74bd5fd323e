package store

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// sweepCursorsOf reads every listener's sweep cursor.
func sweepCursorsOf(t testing.TB, s *Store) map[string]int64 {
	t.Helper()
	cs, err := s.sweepCursors(context.Background())
	must(t, err)
	out := make(map[string]int64, len(cs))
	for _, c := range cs {
		out[c.listener] = c.swept
	}
	return out
}

// walkEntry is one append of TestSweepSeqOrderAcrossListeners.
type walkEntry struct {
	listener string
	kind     Kind
	age      time.Duration // how much older than the clock its time is
}

// TestSweepSeqOrderAcrossListeners journals interleaved entries of four
// listeners over several days (with an injected clock, an entry stamped out
// of time order and a huh record) and checks, sweep after sweep, what the
// seq-order walk deletes and where each listener's cursor ends. Chunks of
// two entries make every walk cross chunk boundaries.
func TestSweepSeqOrderAcrossListeners(t *testing.T) {
	clock := newFakeClock()
	t0 := clock.Now()
	s, dir := openTest(t, Options{Clock: clock.Now})
	s.sweepChunk = 2
	ctx := context.Background()
	policies := map[string]Retention{
		"fast":   {Policy: RetainDays, Days: 1},
		"slow":   {Policy: RetainDays, Days: 3},
		"keeper": {Policy: RetainForever},
		"tool":   {Policy: PruneOnDelivery},
	}
	policy := func(l, _ string) Retention { return policies[l] }
	const day = 24 * time.Hour
	steps := []struct {
		name    string
		at      time.Duration // clock time since t0 for the step
		appends []walkEntry
		marks   []int64
		sweepAt time.Duration
		deleted []int64
		cursors map[string]int64
	}{
		{
			name: "day 0 and 1",
			at:   0,
			appends: []walkEntry{
				{"fast", Message, 0}, {"slow", Message, 0}, {"keeper", Message, 0}, // 1, 2, 3
				{"tool", Message, 0}, {"tool", Huh, 0}, // 4, 5
			},
		},
		{
			name:    "day 1",
			at:      day,
			appends: []walkEntry{{"fast", Message, 0}, {"tool", Message, 0}, {"slow", Message, 0}}, // 6, 7, 8
			marks:   []int64{4},
		},
		{
			// Seq 10 is stamped two days back (a clock step back): it lies
			// beyond fast's cut and waits for a later sweep. Tool's huh
			// record (5) is never delivered and does not hold its cursor;
			// the undelivered 7 does.
			name:    "day 2",
			at:      2 * day,
			appends: []walkEntry{{"fast", Message, 0}, {"fast", Message, 2 * day}, {"tool", Message, 0}}, // 9, 10, 11
			marks:   []int64{11},
			sweepAt: 2*day + time.Nanosecond,
			deleted: []int64{1, 4, 6, 11},
			cursors: map[string]int64{"fast": 8, "slow": 0, "keeper": 0, "tool": 6},
		},
		{
			name:    "day 3",
			at:      3 * day,
			appends: []walkEntry{{"fast", Message, 0}, {"slow", Message, 0}}, // 12, 13
			marks:   []int64{7},
			sweepAt: 3*day + time.Nanosecond,
			deleted: []int64{2, 7, 9, 10},
			cursors: map[string]int64{"fast": 10, "slow": 5, "keeper": 0, "tool": 13},
		},
	}
	var deleted []int64
	for _, st := range steps {
		clock.Advance(t0.Add(st.at).Sub(clock.Now()))
		for _, a := range st.appends {
			e := testEntry(0, "t-"+a.listener)
			e.Listener, e.Kind, e.Time = a.listener, a.kind, clock.Now().Add(-a.age)
			_, err := s.AppendSync(ctx, e)
			must(t, err)
		}
		for _, seq := range st.marks {
			must(t, s.MarkDelivered(seq))
		}
		flush(t, s)
		if st.cursors == nil {
			continue
		}
		clock.Advance(t0.Add(st.sweepAt).Sub(clock.Now()))
		n, err := s.Sweep(ctx, policy)
		must(t, err)
		if n != len(st.deleted) {
			t.Errorf("%s: Sweep deleted %d, want %d", st.name, n, len(st.deleted))
		}
		deleted = append(deleted, st.deleted...)
		var got []int64
		for _, ts := range tombstones(t, s) {
			got = append(got, ts.Seq)
		}
		if d := cmp.Diff(slices.Sorted(slices.Values(deleted)), got); d != "" {
			t.Fatalf("%s: tombstoned seqs (-want +got):\n%s", st.name, d)
		}
		if d := cmp.Diff(st.cursors, sweepCursorsOf(t, s)); d != "" {
			t.Errorf("%s: cursors (-want +got):\n%s", st.name, d)
		}
	}
	reasons := map[int64]string{}
	for _, ts := range tombstones(t, s) {
		reasons[ts.Seq] = ts.Reason
	}
	wantReasons := map[int64]string{1: "retain_days(1)", 6: "retain_days(1)", 9: "retain_days(1)", 10: "retain_days(1)",
		2: "retain_days(3)", 4: "prune_on_delivery", 7: "prune_on_delivery", 11: "prune_on_delivery"}
	if d := cmp.Diff(wantReasons, reasons); d != "" {
		t.Errorf("tombstone reasons (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]int64{3, 5, 8, 12, 13}, seqs(t, s)); d != "" {
		t.Errorf("remaining seqs (-want +got):\n%s", d)
	}

	// The cursors are persistent: after a reopen the same sweep finds
	// nothing more to do.
	cursors := sweepCursorsOf(t, s)
	must(t, s.Close())
	s = openAt(t, dir, Options{Clock: clock.Now})
	n, err := s.Sweep(ctx, policy)
	must(t, err)
	if n != 0 {
		t.Errorf("sweep after reopen deleted %d, want 0", n)
	}
	if d := cmp.Diff(cursors, sweepCursorsOf(t, s)); d != "" {
		t.Errorf("cursors after reopen (-want +got):\n%s", d)
	}
	rep, err := s.Verify(ctx, nil)
	must(t, err)
	if !rep.OK() {
		t.Errorf("Verify: %v", rep.Faults)
	}
}

// TestCutSeq checks the binary search for the retention cut over a journal
// with holes (pruned seqs).
func TestCutSeq(t *testing.T) {
	clock := newFakeClock()
	t0 := clock.Now()
	s, _ := openTest(t, Options{Clock: clock.Now})
	ctx := context.Background()
	for i := range 40 {
		e := testEntry(i, "t")
		e.Time = t0.Add(time.Duration(i) * time.Minute)
		if i%3 == 0 {
			e.Listener = "gone"
		}
		_, err := s.AppendSync(ctx, e)
		must(t, err)
	}
	// Prune the "gone" entries (seqs 1, 4, 7, …) to leave holes.
	clock.Advance(100 * 24 * time.Hour)
	_, err := s.Sweep(ctx, func(l, _ string) Retention {
		if l == "gone" {
			return Retention{Policy: RetainDays, Days: 1}
		}
		return Retention{}
	})
	must(t, err)
	tests := []struct {
		name   string
		after  int64
		cutoff time.Time
		want   int64
	}{
		{"everything is younger", 0, t0, 1},
		{"everything is older", 0, t0.Add(time.Hour), 40}, // 40 itself was pruned
		{"cut on a row", 0, t0.Add(5 * time.Minute), 6},
		{"cut on a hole", 0, t0.Add(9 * time.Minute), 10},
		{"after the cut", 20, t0.Add(9 * time.Minute), 21},
		{"from the cursor", 10, t0.Add(30 * time.Minute), 31},
	}
	for _, tt := range tests {
		got, err := s.cutSeq(ctx, tt.after, tt.cutoff.UnixNano())
		must(t, err)
		if got != tt.want {
			t.Errorf("%s: cutSeq(%d, %s) = %d, want %d", tt.name, tt.after, tt.cutoff.Sub(t0), got, tt.want)
		}
	}
}
