package store

import (
	"fmt"
	"slices"
)

// tombstoneInsert inserts tombstones (seq, deleted_at, reason).
var tombstoneInsert = newRowStatement(`INSERT INTO journal_tombstones (seq, deleted_at, reason) VALUES `,
	`(?, ?, ?)`, ``, 3)

// deleteEntries tombstones the journal entries seqs and removes them from
// their segments: a segment left without entries is deleted, any other is
// rewritten with the entries it keeps, unchanged. Their delivery marks go
// with them (at the commit), and an undelivered entry is no longer waited
// for. Deleting a seq the journal does not hold only tombstones it.
func (w *writer) deleteEntries(seqs []int64, at int64, reason string) error {
	if len(seqs) == 0 {
		return nil
	}
	seqs = slices.Clone(seqs)
	slices.Sort(seqs)
	args := make([]any, 0, 3*len(seqs))
	for _, seq := range seqs {
		w.deliveries.drop(seq)
		args = append(args, seq, at, reason)
	}
	if _, err := w.execRows(tombstoneInsert, len(seqs), args); err != nil {
		return fmt.Errorf("tombstone seqs %d..%d: %w", seqs[0], seqs[len(seqs)-1], err)
	}
	for len(seqs) > 0 {
		s, err := w.segmentCovering(seqs[0])
		if err != nil {
			return err
		}
		if s == nil {
			seqs = seqs[1:]
			continue
		}
		n := 0
		for n < len(seqs) && seqs[n] <= s.last {
			n++
		}
		if err := w.shrinkSegment(s, seqs[:n]); err != nil {
			return err
		}
		seqs = seqs[n:]
	}
	return nil
}

// segmentCovering reads the segment whose range holds seq through the
// writer's connection; nil if none does.
func (w *writer) segmentCovering(seq int64) (*segment, error) {
	w.counters.statements.Add(1)
	var (
		s    *segment
		derr error
	)
	_, err := w.conn.run(`SELECT `+segmentColumns+` FROM journal_segments WHERE first_seq =
		(SELECT max(first_seq) FROM journal_segments WHERE first_seq <= ?1) AND last_seq >= ?1`, []any{seq},
		func(st uintptr) {
			s, derr = w.decodeRow(st)
		})
	if err == nil {
		err = derr
	}
	if err != nil {
		return nil, fmt.Errorf("read the journal segment of seq %d: %w", seq, err)
	}
	return s, nil
}

// shrinkSegment removes the entries dead (ascending, within s's range) from
// s: it deletes s if none is left, else rewrites it with the rest.
func (w *writer) shrinkSegment(s *segment, dead []int64) error {
	keep := make([]*Entry, 0, len(s.entries))
	for i := range s.entries {
		if _, gone := slices.BinarySearch(dead, s.entries[i].Seq); !gone {
			keep = append(keep, &s.entries[i])
		}
	}
	switch {
	case len(keep) == len(s.entries):
		return nil
	case len(keep) == 0:
		if _, err := w.exec(`DELETE FROM journal_segments WHERE first_seq = ?`, s.first); err != nil {
			return fmt.Errorf("delete journal segment %d: %w", s.first, err)
		}
	default:
		data := w.segments.enc.encode(nil, s.first, keep)
		if _, err := w.exec(`UPDATE journal_segments SET entries = ?, data = ? WHERE first_seq = ?`,
			len(keep), data, s.first); err != nil {
			return fmt.Errorf("rewrite journal segment %d: %w", s.first, err)
		}
	}
	return nil
}
