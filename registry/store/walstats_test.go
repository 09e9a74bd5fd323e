package store

import (
	"context"
	"strings"
	"testing"
)

// TestStatsCountWALFrames: each commit adds the pages it wrote to the WAL
// to Stats.WALFrames: a 64 KiB entry takes at least four 16 KiB frames.
func TestStatsCountWALFrames(t *testing.T) {
	s, _ := openTest(t, Options{})
	ctx := context.Background()
	before := s.Stats().WALFrames
	e := testEntry(1, "t")
	e.Bytes = append(e.Bytes, strings.Repeat("z", 64<<10)...)
	if err := s.Append(e); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	after := s.Stats().WALFrames
	if after-before < 4 {
		t.Fatalf("a 64 KiB entry's commit wrote %d WAL frames, want ≥ 4", after-before)
	}
	if err := s.Append(testEntry(2, "t")); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := s.Stats().WALFrames; got <= after {
		t.Fatalf("WALFrames %d after a second commit, want > %d", got, after)
	}
}
