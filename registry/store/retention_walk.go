package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// The retention sweep walks the journal entries of each (listener, profile)
// pair in seq order, from the pair's sweep cursor (journal_sweeps.swept_seq),
// without an index on either: the journal is keyed by seq, and entries are
// appended in time order, so what a policy deletes is, but for stragglers, a
// seq prefix of the pair's entries. Entries journaled before the journal
// recorded profiles (profile NULL) are swept with the pair of profile "".
//
//   - retain_days(N), window(D): a binary search on time over seq finds the
//     cut, the first entry not older than the window (cutSeq); the walk
//     deletes the pair's older entries before it.
//   - prune_on_delivery: the walk runs to the newest entry and deletes the
//     pair's delivered messages (with a window, Either: only those older
//     than it).
//
// An entry the policy keeps for now (an entry younger than the window, an
// undelivered message) stops the cursor: the next sweep looks at
// it again, and the walk goes on past it. Entries the policy keeps for good
// (prune_on_delivery keeps entries other than messages, which are never
// delivered) do not. So every entry below the cursor is gone or kept for
// good, each sweep reads only the entries journaled or expired since the
// previous one, and the walk never reads the whole journal again.

// verdict is what a sweep does with one journal entry.
type verdict uint8

const (
	// keepForGood keeps the entry; the cursor may pass it.
	keepForGood verdict = iota
	// keepForNow keeps the entry; the cursor stops before it.
	keepForNow
	// expire deletes the entry.
	expire
)

// sweptEntry is what the walk reads of one journal entry.
type sweptEntry struct {
	seq       int64
	timeNS    int64
	message   bool // kind is message
	delivered bool // delivered, if a message (prune_on_delivery only)
}

// sweepRule is one listener's policy as the walk applies it.
type sweepRule struct {
	reason string // tombstone reason
	end    int64  // the walk covers seqs up to end
	judge  func(e sweptEntry) verdict
	// byDelivery: the walk reads the entries' delivery marks.
	byDelivery bool
}

// sweepRuleFor returns the walk of policy r for the pair of c at now; ok is
// false for retain_forever.
func (s *Store) sweepRuleFor(ctx context.Context, c sweepCursor, r Retention, now time.Time) (rule sweepRule, ok bool, err error) {
	switch r.Policy {
	case PruneOnDelivery:
		end, err := s.queryInt(`SELECT coalesce(max(seq), 0) FROM journal_rows`)
		if err != nil {
			return sweepRule{}, false, err
		}
		markable := c.listener != ""
		cutoff := now.Add(-r.Window).UnixNano() // r.Window 0: every entry is old enough
		return sweepRule{reason: r.String(), end: end, byDelivery: true,
			judge: func(e sweptEntry) verdict {
				switch {
				case !e.message || !markable:
					return keepForGood
				case e.delivered && (r.Window == 0 || e.timeNS < cutoff):
					return expire
				default:
					return keepForNow
				}
			}}, true, nil
	case RetainDays, Window:
		cutoff := now.Add(-r.age()).UnixNano()
		cut, err := s.cutSeq(ctx, c.swept, cutoff)
		if err != nil {
			return sweepRule{}, false, err
		}
		return sweepRule{reason: r.String(), end: cut - 1,
			judge: func(e sweptEntry) verdict {
				if e.timeNS < cutoff {
					return expire
				}
				return keepForNow
			}}, true, nil
	default:
		return sweepRule{}, false, nil
	}
}

// cutSeq returns the cut of a retain_days or window sweep: the smallest seq p > after
// such that the first journal entry at or after p is not older than cutoff
// (Unix ns), or the newest seq + 1 when there is none. Entries are journaled
// in time order, so the entries before the cut are older than cutoff; it is
// found by binary search over seq, about log2(journal entries) probes of
// the journal's primary key. Entries out of time order only move the cut:
// the walk still checks each entry's time.
func (s *Store) cutSeq(ctx context.Context, after, cutoff int64) (int64, error) {
	var cut int64
	err := s.readTx(func(ctx context.Context, tx *sql.Tx) error {
		var high int64
		if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM journal_rows`).Scan(&high); err != nil {
			return err
		}
		lo, hi := after+1, high+1
		for lo < hi {
			mid := lo + (hi-lo)/2
			var seq, ns int64
			err := tx.QueryRowContext(ctx, `SELECT seq, time_ns FROM journal_rows WHERE seq >= ? ORDER BY seq LIMIT 1`, mid).
				Scan(&seq, &ns)
			switch {
			case errors.Is(err, sql.ErrNoRows) || err == nil && ns >= cutoff:
				hi = mid
			case err != nil:
				return err
			default:
				lo = seq + 1
			}
		}
		cut = lo
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("store: sweep: find the retention cut: %w", err)
	}
	return cut, nil
}

// walk applies rule to the entries of c's pair after its cursor, in
// chunks of s.sweepChunk entries, each chunk's deletions (tombstoned at
// at, Unix ns) and cursor advance one writer transaction. The entries are read on the read pool, so a long
// walk past other listeners' entries does not hold the writer. It returns
// how many entries it deleted.
func (s *Store) walk(ctx context.Context, c sweepCursor, rule sweepRule, at int64) (int, error) {
	var (
		total   int
		from    = c.swept
		stopped = int64(-1) // the first entry kept for now: the cursor stays below it
		chunk   []sweptEntry
		dead    []int64
	)
	for from < rule.end {
		var err error
		chunk, err = s.readSweptEntries(ctx, rule.byDelivery, from, rule.end, c, chunk[:0])
		if err != nil {
			return total, err
		}
		dead = dead[:0]
		for _, e := range chunk {
			switch rule.judge(e) {
			case expire:
				dead = append(dead, e.seq)
			case keepForNow:
				if stopped < 0 {
					stopped = e.seq
				}
			}
		}
		last := rule.end
		if len(chunk) == s.sweepChunk {
			last = chunk[len(chunk)-1].seq
		}
		cursor := last
		if stopped >= 0 {
			cursor = min(cursor, stopped-1)
		}
		if len(dead) > 0 || cursor > c.swept {
			n, err := s.deleteSwept(ctx, c, dead, cursor, rule.reason, at)
			total += n
			if err != nil {
				return total, err
			}
			c.swept = max(c.swept, cursor)
		}
		from = last
	}
	return total, nil
}

// readSweptEntries reads up to s.sweepChunk entries of c's pair in
// (after, end], with whether each is delivered when byDelivery, appending
// them to out.
func (s *Store) readSweptEntries(ctx context.Context, byDelivery bool, after, end int64, c sweepCursor,
	out []sweptEntry) ([]sweptEntry, error) {
	delivered := "FALSE"
	if byDelivery {
		delivered = `seq <= ` + watermarkExpr + ` OR ` + markedExpr
	}
	err := s.read(func(db *sql.DB) error {
		return eachRow(ctx, db, `SELECT seq, time_ns, ro.kind = 'message', `+delivered+`
			FROM journal_rows AS r JOIN journal_routes AS ro ON ro.id = r.route
			WHERE r.seq > ? AND r.seq <= ? AND ro.listener = (SELECT id FROM journal_names WHERE name = ?)
			AND coalesce(ro.profile, 0) = (SELECT id FROM journal_names WHERE name = ?) ORDER BY r.seq LIMIT ?`,
			[]any{after, end, c.listener, c.profile, s.sweepChunk}, func(rows *sql.Rows) error {
				var e sweptEntry
				err := rows.Scan(&e.seq, &e.timeNS, &e.message, &e.delivered)
				out = append(out, e)
				return err
			})
	})
	if err != nil {
		return nil, fmt.Errorf("store: sweep: read journal: %w", err)
	}
	return out, nil
}

// deleteSwept deletes the entries dead with a tombstone giving reason and
// time at, and advances the cursor of c's pair to cursor (it never moves
// back), in one writer transaction.
func (s *Store) deleteSwept(ctx context.Context, c sweepCursor, dead []int64, cursor int64, reason string,
	at int64) (int, error) {
	n, err := s.do(ctx, "sweep", func(w *writer) (int64, error) {
		if err := w.deleteEntries(dead, at, reason); err != nil {
			return 0, err
		}
		if _, err := w.exec(`UPDATE journal_sweeps SET swept_seq = ?3 WHERE listener = ?1 AND profile = ?2 AND swept_seq < ?3`,
			c.listener, c.profile, cursor); err != nil {
			return 0, fmt.Errorf("advance the sweep cursor: %w", err)
		}
		if len(dead) > 0 {
			if _, err := w.exec(pruneKeysQuery); err != nil {
				return 0, fmt.Errorf("delete the lookup keys of emptied partitions: %w", err)
			}
		}
		return int64(len(dead)), nil
	})
	return int(n), err
}
