package store

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// UndeliveredAfter returns, in seq order, up to limit (> 0) of the entries
// Undelivered reports whose seq is above after. Unlike Undelivered, every
// entry owns copies of its texts and bytes, so a page pins no decoded
// segment: a restart re-delivers any backlog a page at a time in bounded
// memory.
func (r *Reader) UndeliveredAfter(after int64, limit int) ([]Entry, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("%w: undelivered page limit %d", ErrInvalid, limit)
	}
	var out []Entry
	err := r.scanUndelivered(after, func(e *Entry) error {
		out = append(out, e.clone())
		if len(out) == limit {
			return errStopScan
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// scanUndelivered calls fn, in seq order and from one snapshot, for each
// entry Undelivered reports whose seq is above after; fn returns
// errStopScan to end the scan. fn must not keep e's texts or bytes.
func (r *Reader) scanUndelivered(after int64, fn func(e *Entry) error) error {
	return r.readTx(func(ctx context.Context, tx *sql.Tx) error {
		t := deliveryTracker{parts: map[int64]*partMarks{}}
		if err := tx.QueryRowContext(ctx, `SELECT `+watermarkExpr).Scan(&t.mark); err != nil {
			return fmt.Errorf("store: read the delivery watermark: %w", err)
		}
		if err := t.loadParts(ctx, tx); err != nil {
			return err
		}
		return scanForward(ctx, tx, max(after, t.mark), func(s *segment) error {
			for i := range s.entries {
				e := &s.entries[i]
				if e.Seq <= after || e.Seq <= t.mark || !markable(e) || t.marked(e.Seq) {
					continue
				}
				if err := fn(e); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

// Each calls fn, in seq order, for every committed entry with seq above
// after, from one snapshot. fn must not keep e, its texts or its bytes once
// it returns (they share their segment's buffers): clone what it keeps.
// An error from fn ends the scan and is returned.
func (r *Reader) Each(after int64, fn func(e *Entry) error) error {
	return r.readTx(func(ctx context.Context, tx *sql.Tx) error {
		return scanForward(ctx, tx, after, func(s *segment) error {
			for i := range s.entries {
				if s.entries[i].Seq <= after {
					continue
				}
				if err := fn(&s.entries[i]); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

// clone returns e with its own copies of its texts and bytes.
func (e *Entry) clone() Entry {
	c := *e
	c.Thread = strings.Clone(e.Thread)
	c.Conversation = strings.Clone(e.Conversation)
	c.From = strings.Clone(e.From)
	c.To = strings.Clone(e.To)
	c.Listener = strings.Clone(e.Listener)
	c.PayloadTag = strings.Clone(e.PayloadTag)
	c.Diagnostics = strings.Clone(e.Diagnostics)
	c.Bytes = bytes.Clone(e.Bytes)
	return c
}
