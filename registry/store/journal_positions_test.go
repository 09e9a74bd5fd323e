package store

import (
	"context"
	"testing"
	"time"
)

// TestJournalPositions: tail and follow read every seq of the journal once,
// a pruned entry in its place with its metadata and why it was pruned (a
// tombstone without metadata as such), a committed entry as itself.
func TestJournalPositions(t *testing.T) {
	s, _ := openTest(t, Options{BatchRows: 100, BatchDelay: time.Hour})
	for i := range 4 {
		must(t, s.Append(testEntry(i, "t")))
	}
	flush(t, s)
	tamper := func(q string) {
		t.Helper()
		_, err := s.do(context.Background(), "tamper", func(w *writer) (int64, error) { return w.exec(q) })
		must(t, err)
	}
	// seq 2 pruned with its metadata (layout 3), seq 3 by an old tombstone.
	tamper(`INSERT INTO journal_tombstones (seq, deleted_at, reason, time_ns, thread, conversation, direction, kind,
		sender, recipient, listener, root, sha256, profile)
		SELECT seq, 7000000000, 'prune_on_delivery', time_ns, thread, conversation, direction, kind, sender,
		recipient, listener, root, sha256, 'calc' FROM journal_entries WHERE seq = 2`)
	tamper(`DELETE FROM journal_rows WHERE seq = 2`)
	tamper(`INSERT INTO journal_tombstones (seq, deleted_at, reason) VALUES (3, 8000000000, 'window')`)
	tamper(`DELETE FROM journal_rows WHERE seq = 3`)

	check := func(what string, ps []Position, seqs ...int64) {
		t.Helper()
		if len(ps) != len(seqs) {
			t.Fatalf("%s: %d positions %+v, want seqs %v", what, len(ps), ps, seqs)
		}
		for i, p := range ps {
			if p.Seq != seqs[i] {
				t.Errorf("%s: position %d is seq %d, want %d", what, i, p.Seq, seqs[i])
			}
			switch p.Seq {
			case 2:
				if p.Pruned == nil || p.Pruned.Reason != "prune_on_delivery" || p.Pruned.NoMetadata ||
					p.Thread != "t" || p.Profile != "calc" || p.Time.IsZero() || len(p.Bytes) != 0 {
					t.Errorf("%s: seq 2 %+v %+v", what, p.Entry, p.Pruned)
				}
			case 3:
				if p.Pruned == nil || p.Pruned.Reason != "window" || !p.Pruned.NoMetadata || !p.ProfileUnknown {
					t.Errorf("%s: seq 3 %+v %+v", what, p.Entry, p.Pruned)
				}
			default:
				if p.Pruned != nil || len(p.Bytes) == 0 {
					t.Errorf("%s: seq %d %+v %+v", what, p.Seq, p.Entry, p.Pruned)
				}
			}
		}
	}
	tail, err := s.TailPositions(3)
	must(t, err)
	check("tail 3", tail, 2, 3, 4)
	tail, err = s.TailPositions(10)
	must(t, err)
	check("tail 10", tail, 1, 2, 3, 4)
	after, err := s.PositionsAfter(1, 2)
	must(t, err)
	check("after 1, 2", after, 2, 3)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var seen []Position
	err = s.FollowPositions(ctx, 0, time.Millisecond, func(p Position) error {
		seen = append(seen, p)
		if len(seen) == 4 {
			cancel()
		}
		return nil
	})
	if err != context.Canceled {
		t.Fatalf("follow: %v", err)
	}
	check("follow", seen, 1, 2, 3, 4)
}
