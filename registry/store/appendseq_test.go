package store

import (
	"context"
	"testing"
)

// TestAppendSeqMatchesCommit: the seq AppendSeq returns is the one the entry
// is committed with, and MarkDelivered accepts it.
func TestAppendSeqMatchesCommit(t *testing.T) {
	s, _ := openTest(t, Options{})
	want := map[int64]string{}
	for i := range 20 {
		e := testEntry(i, "t")
		seq, err := s.AppendSeq(e)
		must(t, err)
		want[seq] = string(e.Bytes)
	}
	flush(t, s)
	entries, err := s.After(0, 0)
	must(t, err)
	if len(entries) != len(want) {
		t.Fatalf("committed %d entries, want %d", len(entries), len(want))
	}
	for _, e := range entries {
		if want[e.Seq] != string(e.Bytes) {
			t.Fatalf("seq %d holds %q, AppendSeq promised %q", e.Seq, e.Bytes, want[e.Seq])
		}
	}
	must(t, s.MarkDelivered(entries[3].Seq))
	flush(t, s)
}

// TestAppendSeqAfterReopen: seqs continue after the last committed one.
func TestAppendSeqAfterReopen(t *testing.T) {
	s, dir := openTest(t, Options{})
	for i := range 3 {
		_, err := s.AppendSeq(testEntry(i, "t"))
		must(t, err)
	}
	must(t, s.Close())
	s2, err := Open(dir, Options{})
	must(t, err)
	defer s2.Close()
	seq, err := s2.AppendSeq(testEntry(9, "t"))
	must(t, err)
	if seq != 4 {
		t.Fatalf("first seq after reopen = %d, want 4", seq)
	}
	must(t, s2.Flush(context.Background()))
	rep, err := s2.Verify(context.Background(), nil)
	must(t, err)
	if !rep.OK() {
		t.Fatalf("Verify: %v", rep.Faults)
	}
}
