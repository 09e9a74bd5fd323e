package store

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestSegments: segment rows are upserted by (thread, index), survive a
// reopen exactly, go with DeleteSegments, and bad rows are refused.
func TestSegments(t *testing.T) {
	s, dir := openTest(t, Options{})
	at := time.Date(2025, 3, 1, 12, 0, 0, 5, time.UTC)
	seg := func(thread string, i int, tier string) SegmentRow {
		return SegmentRow{Thread: thread, Index: i, Slots: []int{i, i + 2, i + 5}, ContentType: "tool_call", Tier: tier,
			Relevance: 0.25, Scored: true, Summary: "called calculate: 6*7 → 42 — Grüße ✓", SummaryBy: "extractive",
			Bytes: 1234, Tokens: 310, Changed: at}
	}
	must(t, s.PutSlot(SlotRow{Thread: "t1", Index: 0, Raw: []byte("x")}))
	must(t, s.PutSegment(seg("t1", 0, "folded")))
	must(t, s.PutSegment(seg("t1", 3, "evicted")))
	must(t, s.PutSegment(seg("t2", 0, "folded")))
	must(t, s.PutSegment(seg("t1", 0, "expanded"))) // replaces
	must(t, s.DeleteSegments("t2"))
	flush(t, s)
	want := []SegmentRow{seg("t1", 0, "expanded"), seg("t1", 3, "evicted")}
	got, err := s.LoadSegments()
	must(t, err)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("LoadSegments (-want +got):\n%s", d)
	}
	must(t, s.Close())
	s = openAt(t, dir, Options{})
	got, err = s.LoadSegments()
	must(t, err)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("after reopen (-want +got):\n%s", d)
	}
	for _, bad := range []SegmentRow{
		{Index: 0, Slots: []int{0}, Tier: "folded"},
		{Thread: "t", Index: -1, Slots: []int{-1}, Tier: "folded"},
		{Thread: "t", Index: 0, Slots: []int{0}, Tier: "gone"},
		{Thread: "t", Index: 0, Slots: []int{1}, Tier: "folded"},
		{Thread: "t", Index: 0, Tier: "folded"},
		{Thread: "t", Index: 0, Slots: []int{0}, Tier: "folded", Relevance: math.NaN()},
		{Thread: "t", Index: 0, Slots: []int{0}, Tier: "folded", Relevance: 2},
	} {
		if err := s.PutSegment(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("PutSegment(%+v) = %v, want ErrInvalid", bad, err)
		}
	}
}
