package store

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLookupAfterReadsOnlyNewEntries: ThreadAfter and ConversationAfter
// return, in order, the entries above the cursor — in summarised
// partitions and in the open one, up to the limit — and read only those:
// following a long conversation costs what is new, not the whole of it.
func TestLookupAfterReadsOnlyNewEntries(t *testing.T) {
	s, _ := openTest(t, Options{})
	const n = 3<<journalPartitionBits + 10 // partitions 0–2 summarised, 3 open
	seqs := appendThreads(t, s, n, 3)["t1"]
	for _, tc := range []struct {
		name         string
		after, limit int
	}{
		{"from the start", 0, 0},
		{"in a summarised partition", int(seqs[100]), 0},
		{"at a partition's edge", int(seqs[len(seqs)/2]), 0},
		{"in the open partition", int(seqs[len(seqs)-3]), 0},
		{"at the end", int(seqs[len(seqs)-1]), 0},
		{"a page", int(seqs[100]), 7},
		{"a page across partitions", int(seqs[300]), 700},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want []int64
			for _, seq := range seqs {
				if seq > int64(tc.after) && (tc.limit == 0 || len(want) < tc.limit) {
					want = append(want, seq)
				}
			}
			for _, read := range []struct {
				name string
				fn   func(string, int64, int) ([]Entry, error)
				id   string
			}{{"ThreadAfter", s.ThreadAfter, "t1"}, {"ConversationAfter", s.ConversationAfter, "conv-t1"}} {
				before := s.LookupRows()
				es, err := read.fn(read.id, int64(tc.after), tc.limit)
				must(t, err)
				var got []int64
				for _, e := range es {
					got = append(got, e.Seq)
				}
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("%s(%s, %d, %d) (-want +got):\n%s", read.name, read.id, tc.after, tc.limit, d)
				}
				if rows := s.LookupRows() - before; rows != int64(len(want)) {
					t.Errorf("%s read %d rows, want the %d new ones", read.name, rows, len(want))
				}
			}
		})
	}
	if es, err := s.ConversationAfter("conv-none", 0, 0); err != nil || len(es) != 0 {
		t.Errorf("an unknown conversation: %d entries, %v", len(es), err)
	}
}
