package store

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"
)

// Position is one seq of the journal as a reader sees it: a committed
// entry, or (Pruned set) what retention kept of an entry it deleted — its
// metadata in Entry, without bytes. A tombstone without metadata (migrated
// from the legacy layout) gives an Entry of only Seq, and
// Pruned.NoMetadata is set.
type Position struct {
	Entry
	Pruned *Pruned
}

// prunedColumns selects a tombstone for scanPruned.
const prunedColumns = `seq, deleted_at, reason, time_ns, coalesce(thread, ''), coalesce(conversation, ''),
	coalesce(direction, ''), coalesce(kind, ''), coalesce(sender, ''), coalesce(recipient, ''),
	coalesce(listener, ''), coalesce(root, ''), sha256, profile`

// scanPruned reads every tombstone a query over prunedColumns selects.
func scanPruned(ctx context.Context, q queryer, query string, args ...any) ([]Pruned, error) {
	return scanRows(ctx, q, query, args, func(rows *sql.Rows) (Pruned, error) {
		var (
			p         Pruned
			at        int64
			ns        sql.NullInt64
			dir, kind string
			sum       []byte
			profile   sql.NullString
		)
		err := rows.Scan(&p.Seq, &at, &p.Reason, &ns, &p.Thread, &p.Conversation, &dir, &kind, &p.From, &p.To,
			&p.Listener, &p.PayloadTag, &sum, &profile)
		p.At = time.Unix(0, at).UTC()
		if ns.Valid {
			p.Time = time.Unix(0, ns.Int64).UTC()
		} else {
			p.NoMetadata = true
		}
		p.Direction, _ = ParseDirection(dir)
		p.Kind, _ = ParseKind(kind)
		copy(p.SHA256[:], sum)
		p.Profile, p.ProfileUnknown = profile.String, !profile.Valid
		return p, err
	})
}

// TailPositions returns the last n positions of the journal — committed
// entries and pruned ones alike — in ascending seq order, from one
// snapshot.
func (r *Reader) TailPositions(n int) ([]Position, error) {
	if n <= 0 {
		return nil, nil
	}
	var out []Position
	err := r.readTx(func(ctx context.Context, tx *sql.Tx) error {
		var err error
		out, err = positions(ctx, tx, `ORDER BY seq DESC LIMIT ?`, n)
		if len(out) > n {
			out = out[len(out)-n:]
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: tail: %w", err)
	}
	return out, nil
}

// PositionsAfter returns up to limit positions with seq greater than seq
// (limit <= 0: no limit), in ascending order, from one snapshot: every seq
// up to the highest committed one is there, as an entry or as a pruned
// one, so polling PositionsAfter(last) sees each position once — an entry
// pruned before it was read shows as pruned.
func (r *Reader) PositionsAfter(seq int64, limit int) ([]Position, error) {
	if limit <= 0 {
		limit = -1
	}
	var out []Position
	err := r.readTx(func(ctx context.Context, tx *sql.Tx) error {
		var err error
		out, err = positions(ctx, tx, `WHERE seq > ? ORDER BY seq LIMIT ?`, seq, limit)
		if limit > 0 && len(out) > limit {
			out = out[:limit]
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: read journal: %w", err)
	}
	return out, nil
}

// positions reads the entries and the tombstones a clause selects (each
// at most what its LIMIT says) and merges them in ascending seq order.
func positions(ctx context.Context, tx *sql.Tx, clause string, args ...any) ([]Position, error) {
	var out []Position
	if err := eachEntry(ctx, tx, `SELECT `+entryColumns+` FROM journal_entries `+clause, args, func(e *Entry) error {
		out = append(out, Position{Entry: *e})
		return nil
	}); err != nil {
		return nil, err
	}
	pruned, err := scanPruned(ctx, tx, `SELECT `+prunedColumns+` FROM journal_tombstones `+clause, args...)
	if err != nil {
		return nil, fmt.Errorf("read pruned entries: %w", err)
	}
	for i := range pruned {
		out = append(out, Position{Entry: pruned[i].Entry, Pruned: &pruned[i]})
	}
	// A seq is an entry or a tombstone; were it both, the entry is kept.
	slices.SortFunc(out, func(a, b Position) int {
		return cmp.Or(cmp.Compare(a.Seq, b.Seq), cmp.Compare(prunedRank(a), prunedRank(b)))
	})
	return slices.CompactFunc(out, func(a, b Position) bool { return a.Seq == b.Seq }), nil
}

// prunedRank orders an entry before a tombstone of the same seq.
func prunedRank(p Position) int {
	if p.Pruned != nil {
		return 1
	}
	return 0
}

// FollowPositions is Follow over positions: fn is called, in seq order,
// for every position with a seq greater than after — committed entries,
// and entries pruned before they were read, as pruned — first those
// already there, then new ones as they commit, polling every interval
// (DefaultFollowInterval when zero). It returns ctx.Err() when ctx ends,
// or the first error of fn or of a read.
func (r *Reader) FollowPositions(ctx context.Context, after int64, interval time.Duration, fn func(Position) error) error {
	return follow(ctx, after, interval, r.PositionsAfter, func(p Position) int64 { return p.Seq }, fn)
}
