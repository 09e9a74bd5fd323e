package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// tombstone is a journal_tombstones row as tests read it.
type tombstone struct {
	Seq       int64
	DeletedAt int64
	Reason    string
}

// tombstones reads every tombstone in seq order.
func tombstones(t testing.TB, s *Store) []tombstone {
	t.Helper()
	rows, err := s.rdb.Query(`SELECT seq, deleted_at, reason FROM journal_tombstones ORDER BY seq`)
	must(t, err)
	defer rows.Close()
	var out []tombstone
	for rows.Next() {
		var ts tombstone
		must(t, rows.Scan(&ts.Seq, &ts.DeletedAt, &ts.Reason))
		out = append(out, ts)
	}
	must(t, rows.Err())
	return out
}

// seqs returns the seqs of the journal rows.
func seqs(t testing.TB, s *Store) []int64 {
	t.Helper()
	es, err := s.After(0, 0)
	must(t, err)
	var out []int64
	for _, e := range es {
		out = append(out, e.Seq)
	}
	return out
}

func TestRetentionValidate(t *testing.T) {
	tests := []struct {
		r    Retention
		ok   bool
		name string
	}{
		{Retention{}, true, "retain_forever"},
		{Retention{Policy: RetainForever}, true, "retain_forever"},
		{Retention{Policy: PruneOnDelivery}, true, "prune_on_delivery"},
		{Retention{Policy: RetainDays, Days: 30}, true, "retain_days(30)"},
		{Retention{Policy: RetainDays}, false, "retain_days(0)"},
		{Retention{Policy: "keep_some"}, false, "keep_some"},
		{Retention{Policy: Window, Window: 36 * time.Hour}, true, "window(36h)"},
		{Retention{Policy: Window}, false, "window(0s)"},
		{Retention{Policy: Window, Window: -time.Hour}, false, "window(-1h)"},
		{Retention{Policy: PruneOnDelivery, Window: time.Hour}, true, "prune_on_delivery+window(1h)"},
		{Retention{Policy: PruneOnDelivery, Window: -time.Hour}, false, "prune_on_delivery"},
	}
	for _, tt := range tests {
		if err := tt.r.Validate(); (err == nil) != tt.ok {
			t.Errorf("%+v.Validate() = %v, want ok=%v", tt.r, err, tt.ok)
		}
		if got := tt.r.String(); got != tt.name {
			t.Errorf("%+v.String() = %q, want %q", tt.r, got, tt.name)
		}
	}
}

// TestSweepPolicies journals entries for one listener per policy, advances
// the injected clock and checks what each sweep deletes, and that every
// deletion left a tombstone.
func TestSweepPolicies(t *testing.T) {
	clock := newFakeClock()
	s, _ := openTest(t, Options{Clock: clock.Now})
	ctx := context.Background()
	policies := map[string]Retention{
		"keeper":  {Policy: RetainForever},
		"tool":    {Policy: PruneOnDelivery},
		"auditor": {Policy: RetainDays, Days: 2},
	}
	policy := func(l, _ string) Retention { return policies[l] } // "" → retain_forever
	add := func(listener string) int64 {
		e := testEntry(0, "t-"+listener)
		e.Listener = listener
		seq, err := s.AppendSync(ctx, e)
		must(t, err)
		return seq
	}
	// Day 0: one entry each (seq 1 keeper, 2 tool, 3 auditor, 4 no listener).
	for _, l := range []string{"keeper", "tool", "auditor", ""} {
		add(l)
	}
	clock.Advance(24 * time.Hour)
	// Day 1: seq 5 tool, 6 auditor.
	add("tool")
	add("auditor")
	must(t, s.MarkDelivered(2))
	must(t, s.MarkDelivered(1)) // keeper: delivery does not matter
	flush(t, s)

	// Day 1: only the delivered tool entry goes.
	n, err := s.Sweep(ctx, policy)
	must(t, err)
	if n != 1 {
		t.Fatalf("day 1 sweep deleted %d, want 1", n)
	}
	if d := cmp.Diff([]int64{1, 3, 4, 5, 6}, seqs(t, s)); d != "" {
		t.Fatalf("after day 1 (-want +got):\n%s", d)
	}
	day1 := clock.Now().UnixNano()

	// Exactly 2 days after the first entries nothing is older than the
	// window yet; a nanosecond later seq 3 expires.
	clock.Advance(24 * time.Hour)
	n, err = s.Sweep(ctx, policy)
	must(t, err)
	if n != 0 {
		t.Fatalf("sweep at exactly 2 days deleted %d, want 0", n)
	}
	clock.Advance(time.Nanosecond)
	n, err = s.Sweep(ctx, policy)
	must(t, err)
	if n != 1 {
		t.Fatalf("sweep just past 2 days deleted %d, want 1", n)
	}
	day2 := clock.Now().UnixNano()

	// Day 10: auditor's seq 6 expires; tool's undelivered seq 5 stays; the
	// keeper and the listener-less entry stay forever.
	clock.Advance(8 * 24 * time.Hour)
	must(t, s.MarkDelivered(1))
	flush(t, s)
	n, err = s.Sweep(ctx, policy)
	must(t, err)
	if n != 1 {
		t.Fatalf("day 10 sweep deleted %d, want 1", n)
	}
	if d := cmp.Diff([]int64{1, 4, 5}, seqs(t, s)); d != "" {
		t.Fatalf("after day 10 (-want +got):\n%s", d)
	}
	want := []tombstone{
		{2, day1, "prune_on_delivery"},
		{3, day2, "retain_days(2)"},
		{6, clock.Now().UnixNano(), "retain_days(2)"},
	}
	if d := cmp.Diff(want, tombstones(t, s)); d != "" {
		t.Errorf("tombstones (-want +got):\n%s", d)
	}
	rep, err := s.Verify(ctx, nil)
	must(t, err)
	if !rep.OK() || rep.Rows != 3 || rep.Tombstones != 3 {
		t.Errorf("Verify after sweeps = %+v", rep)
	}
	// The delivery mark of a pruned entry went with it.
	if marks := deliveredParts(t, s)[0]; len(marks) > 2 && marks[2] == '1' {
		t.Error("delivery mark of a pruned entry remains")
	}
}

// TestSweepChunks deletes more rows than one sweep chunk.
func TestSweepChunks(t *testing.T) {
	clock := newFakeClock()
	s, _ := openTest(t, Options{Clock: clock.Now})
	s.sweepChunk = 10
	const total = 10*2 + 7
	for i := range total {
		must(t, s.Append(testEntry(i, "t")))
	}
	flush(t, s)
	clock.Advance(48 * time.Hour)
	commits := s.Stats().Commits
	n, err := s.Sweep(context.Background(), func(_, _ string) Retention { return Retention{Policy: RetainDays, Days: 1} })
	must(t, err)
	if n != total {
		t.Fatalf("deleted %d, want %d", n, total)
	}
	if got := s.Stats().Commits - commits; got != 3 {
		t.Errorf("sweep used %d transactions, want 3 chunks", got)
	}
	if c, _ := s.Count(); c != 0 {
		t.Errorf("Count = %d after sweeping everything", c)
	}
	if last, _ := s.LastSeq(); last != total {
		t.Errorf("LastSeq = %d, want %d (pruning keeps the high-water mark)", last, total)
	}
	// New entries continue the sequence.
	seq, err := s.AppendSync(context.Background(), testEntry(0, "t"))
	must(t, err)
	if seq != total+1 {
		t.Errorf("seq after pruning everything = %d, want %d", seq, total+1)
	}
}

func TestSweepInvalidPolicy(t *testing.T) {
	s, _ := openTest(t, Options{})
	must(t, s.Append(testEntry(1, "t")))
	flush(t, s)
	n, err := s.Sweep(context.Background(), func(_, _ string) Retention { return Retention{Policy: "bogus"} })
	if n != 0 || !errors.Is(err, ErrInvalid) {
		t.Fatalf("Sweep with an invalid policy = %d, %v; want 0, ErrInvalid", n, err)
	}
}

func TestStartSweeper(t *testing.T) {
	clock := newFakeClock()
	s, _ := openTest(t, Options{Clock: clock.Now})
	swept := make(chan int, 100)
	s.afterSweep = func(n int, err error) {
		if err != nil {
			t.Error(err)
		}
		swept <- n
	}
	for i := range 5 {
		must(t, s.Append(testEntry(i, "t")))
	}
	flush(t, s)
	clock.Advance(72 * time.Hour)
	if _, err := s.StartSweeper(context.Background(), 0, nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("StartSweeper(0) = %v, want ErrInvalid", err)
	}
	stop, err := s.StartSweeper(context.Background(), time.Millisecond,
		func(_, _ string) Retention { return Retention{Policy: RetainDays, Days: 1} })
	must(t, err)
	total := 0
	for total < 5 {
		select {
		case n := <-swept:
			total += n
		case <-time.After(10 * time.Second):
			t.Fatalf("sweeper deleted %d of 5", total)
		}
	}
	stop()
	stop2, err := s.StartSweeper(context.Background(), time.Millisecond, func(_, _ string) Retention { return Retention{} })
	must(t, err)
	// Close stops a running sweeper.
	must(t, s.Close())
	stop2()
	if c := len(tombstones(t, openAt(t, s.Dir(), Options{}))); c != 5 {
		t.Fatalf("tombstones after sweeper = %d, want 5", c)
	}
}
