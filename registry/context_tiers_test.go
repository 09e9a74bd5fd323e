package registry

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// segmentLog is a SlotSink and SegmentSink recording segment writes.
type segmentLog struct {
	mu   sync.Mutex
	puts []Segment
}

func (l *segmentLog) SlotAppended(Slot)    {}
func (l *segmentLog) ThreadDeleted(string) {}
func (l *segmentLog) SegmentPut(s Segment) { l.mu.Lock(); l.puts = append(l.puts, s); l.mu.Unlock() }
func (l *segmentLog) count() int           { l.mu.Lock(); defer l.mu.Unlock(); return len(l.puts) }
func (l *segmentLog) last() Segment        { l.mu.Lock(); defer l.mu.Unlock(); return l.puts[len(l.puts)-1] }
func (l *segmentLog) all() []Segment {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Segment(nil), l.puts...)
}

func tiersBuffer(t *testing.T, sink SlotSink) *ContextBuffer {
	t.Helper()
	clock := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	b, err := NewContextBuffer(ContextConfig{Sink: sink, Clock: func() time.Time { clock = clock.Add(time.Second); return clock }})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFoldUnfoldKeepsOriginalBytes: folding changes what the segment is
// recorded as, never its slots; unfolding gives back the bytes exactly as
// appended — a large payload and non-ASCII text included — and the tier
// goes back to expanded.
func TestFoldUnfoldKeepsOriginalBytes(t *testing.T) {
	large := []byte("<Note><Text>" + strings.Repeat("Grüße, 世界! ✓ ünïcødé — ", 20000) + "</Text></Note>")
	tests := []struct {
		name string
		raw  []byte
	}{
		{"small", []byte("<Note><Text>the code word is PAPAYA-7</Text></Note>")},
		{"large non-ASCII", large},
		{"empty", []byte{}},
		{"invalid UTF-8 kept as is", []byte{0xff, 0xfe, 'x', 0xc3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &segmentLog{}
			b := tiersBuffer(t, log)
			orig := bytes.Clone(tt.raw)
			if _, err := b.Append(Slot{ThreadID: "t", From: "alice", To: "bot", PayloadType: "Note", Raw: tt.raw}); err != nil {
				t.Fatal(err)
			}
			seg, err := b.Fold("t", 0, "a note about a code word", "extractive")
			if err != nil {
				t.Fatal(err)
			}
			if seg.Tier != TierFolded || seg.ID != "s0" || seg.Summary != "a note about a code word" || seg.Changed.IsZero() {
				t.Fatalf("folded segment %+v", seg)
			}
			tc, _ := b.Thread("t")
			if got := tc.Segments(); len(got) != 1 || got[0].Tier != TierFolded || got[0].From != "alice" {
				t.Fatalf("segments %+v", got)
			}
			if s, _ := tc.At(0); !bytes.Equal(s.Raw, orig) {
				t.Fatal("folding changed the slot")
			}
			seg, slots, err := b.Unfold("t", 0)
			if err != nil {
				t.Fatal(err)
			}
			if seg.Tier != TierExpanded || len(slots) != 1 || !bytes.Equal(slots[0].Raw, orig) {
				t.Fatalf("unfolded %+v: %d slots, bytes equal %v", seg, len(slots), len(slots) == 1 && bytes.Equal(slots[0].Raw, orig))
			}
			if seg.Summary != "a note about a code word" {
				t.Errorf("the summary was not kept for the next fold: %q", seg.Summary)
			}
			if log.count() != 2 || log.last().Tier != TierExpanded {
				t.Errorf("sink told %+v", log.all())
			}
		})
	}
}

// TestPutSegments: segments are checked against the thread's slots; a
// recorded segment covers its slots once in the view, the others are
// expanded segments of their own; the sink hears of changes, not of a
// relevance alone; an overlapping segment replaces the one it overlaps.
func TestPutSegments(t *testing.T) {
	log := &segmentLog{}
	b := tiersBuffer(t, log)
	for i := 0; i < 5; i++ {
		if _, err := b.Append(Slot{ThreadID: "t", From: "x", PayloadType: "P", Raw: []byte("<P>12345678</P>")}); err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range []struct {
		name string
		segs []Segment
	}{
		{"unknown tier", []Segment{{Index: 0, Tier: "swapped"}}},
		{"slot beyond the history", []Segment{{Index: 4, Slots: []int{4, 5}, Tier: TierFolded}}},
		{"not beginning at index", []Segment{{Index: 1, Slots: []int{2}, Tier: TierFolded}}},
		{"descending", []Segment{{Index: 1, Slots: []int{1, 3, 2}, Tier: TierFolded}}},
		{"relevance above 1", []Segment{{Index: 1, Tier: TierFolded, Relevance: 1.5}}},
		{"good then bad: nothing kept", []Segment{{Index: 0, Tier: TierFolded}, {Index: -1, Tier: TierFolded}}},
	} {
		if _, err := b.PutSegments("t", bad.segs); !errors.Is(err, ErrInvalidSegment) {
			t.Errorf("%s: err %v", bad.name, err)
		}
	}
	if _, err := b.PutSegments("nobody", []Segment{{Index: 0, Tier: TierFolded}}); !errors.Is(err, ErrInvalidSegment) {
		t.Errorf("no history: %v", err)
	}
	if log.count() != 0 {
		t.Fatalf("refused segments reached the sink: %+v", log.all())
	}
	got, err := b.PutSegments("t", []Segment{
		{Index: 1, Slots: []int{1, 3}, ContentType: "tool_call", Tier: TierFolded, Summary: "called f", SummaryBy: "extractive",
			Relevance: 0.1, Scored: true, Bytes: 30, Tokens: 8},
		{Index: 0, ContentType: "message", Tier: TierExpanded, Relevance: 0.9, Scored: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].ID != "s1" || got[0].ThreadID != "t" || got[1].ID != "s0" {
		t.Fatalf("recorded %+v", got)
	}
	tc, _ := b.Thread("t")
	var ids []string
	for _, s := range tc.Segments() {
		ids = append(ids, s.ID+":"+string(s.Tier))
	}
	if strings.Join(ids, " ") != "s0:expanded s1:folded s2:expanded s4:expanded" {
		t.Fatalf("view %v", ids)
	}
	if s, _ := tc.Segment(3); s.ID != "s1" {
		t.Errorf("slot 3 is in %s, want s1", s.ID)
	}
	if n := log.count(); n != 2 {
		t.Fatalf("sink told %d times, want 2", n)
	}
	// Relevance alone: not told.
	if _, err := b.PutSegments("t", []Segment{{Index: 0, ContentType: "message", Tier: TierExpanded, Relevance: 0.2, Scored: true}}); err != nil {
		t.Fatal(err)
	}
	if log.count() != 2 {
		t.Errorf("a relevance change reached the sink")
	}
	if s, _ := tc.Segment(0); s.Relevance != 0.2 {
		t.Errorf("relevance not kept in memory: %v", s.Relevance)
	}
	// A segment over slots 3 and 4 replaces s1, which covered 3.
	if _, err := b.PutSegments("t", []Segment{{Index: 3, Slots: []int{3, 4}, Tier: TierEvicted}}); err != nil {
		t.Fatal(err)
	}
	ids = ids[:0]
	for _, s := range tc.Segments() {
		ids = append(ids, s.ID+":"+string(s.Tier))
	}
	if strings.Join(ids, " ") != "s0:expanded s1:expanded s2:expanded s3:evicted" {
		t.Fatalf("view after overlap %v", ids)
	}
	if rec := tc.Recorded(); len(rec) != 2 || rec[1].ID != "s3" {
		t.Errorf("recorded %+v", rec)
	}
}

// TestRestoreSegments: persisted segments come back beside restored
// slots; one whose slots are gone is skipped.
func TestRestoreSegments(t *testing.T) {
	b := tiersBuffer(t, nil)
	slots := []Slot{{Index: 0, ThreadID: "t", Raw: []byte("a")}, {Index: 1, ThreadID: "t", Raw: []byte("b")}}
	if err := b.Restore(slots); err != nil {
		t.Fatal(err)
	}
	skipped := b.RestoreSegments([]Segment{
		{ThreadID: "t", Index: 0, Slots: []int{0, 1}, Tier: TierFolded, Summary: "a and b"},
		{ThreadID: "t", Index: 5, Tier: TierFolded},
		{ThreadID: "gone", Index: 0, Tier: TierFolded},
	})
	if skipped != 2 {
		t.Errorf("skipped %d, want 2", skipped)
	}
	tc, _ := b.Thread("t")
	if got := tc.Segments(); len(got) != 1 || got[0].Tier != TierFolded || got[0].Summary != "a and b" {
		t.Errorf("segments %+v", got)
	}
	// A restored segment has its id, as the agent's notes name it and the
	// context API lists it (the store keeps its index alone).
	for _, s := range append(tc.Segments(), tc.Recorded()...) {
		if s.ID != "s0" || s.ThreadID != "t" {
			t.Errorf("restored segment %+v: want id s0 on t", s)
		}
	}
}

func TestSegmentID(t *testing.T) {
	for _, tt := range []struct {
		id   string
		n    int
		good bool
	}{{"s0", 0, true}, {"s12", 12, true}, {" s7 ", 7, true}, {"s", 0, false}, {"12", 0, false}, {"s-1", 0, false},
		{"s01", 0, false}, {"s1x", 0, false}, {"s9999999999", 0, false}, {"S3", 0, false}} {
		n, ok := ParseSegmentID(tt.id)
		if ok != tt.good || (ok && n != tt.n) {
			t.Errorf("ParseSegmentID(%q) = %d, %v", tt.id, n, ok)
		}
		if ok && SegmentID(n) != strings.TrimSpace(tt.id) {
			t.Errorf("SegmentID(%d) = %s", n, SegmentID(n))
		}
	}
}
