package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
)

// queryer runs queries: a *sql.DB, *sql.Conn or *sql.Tx.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// segmentPage is how many segments a scan reads per query.
const segmentPage = 32

// scanSegmentRows decodes and closes the segments a query over
// segmentColumns returned.
func scanSegmentRows(rows *sql.Rows, err error, out []*segment) ([]*segment, error) {
	out, _, _, err = scanSegmentPage(rows, err, out, nil)
	return out, err
}

// scanSegmentPage is scanSegmentRows that also returns how many rows it read
// and the highest last_seq among them. With onCorrupt set, a segment that
// does not decode is passed to it and skipped instead of failing the read.
func scanSegmentPage(rows *sql.Rows, err error, out []*segment, onCorrupt func(error)) (page []*segment, n int, high int64, _ error) {
	if err != nil {
		return out, 0, 0, fmt.Errorf("store: read journal segments: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			first, last, count, codec int64
			data                      []byte
		)
		if err := rows.Scan(&first, &last, &count, &codec, &data); err != nil {
			return out, n, high, fmt.Errorf("store: read journal segments: %w", err)
		}
		n++
		high = max(high, last)
		s, err := decodeSegment(first, last, count, codec, data)
		if err != nil {
			if onCorrupt != nil {
				onCorrupt(err)
				continue
			}
			return out, n, high, fmt.Errorf("store: %w", err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return out, n, high, fmt.Errorf("store: read journal segments: %w", err)
	}
	return out, n, high, nil
}

// errStopScan ends a segment scan early without an error.
var errStopScan = errors.New("stop scan")

// scanForward calls fn, in seq order, for every segment that may hold a seq
// above after, reading them through q a page at a time (q should be a
// read transaction, so the pages come from one snapshot). fn may return
// errStopScan to end the scan.
func scanForward(ctx context.Context, q queryer, after int64, fn func(s *segment) error) error {
	return scanForwardSkipping(ctx, q, after, nil, fn)
}

// scanForwardSkipping is scanForward that passes the segments that do not
// decode to onCorrupt, when set, and goes on.
func scanForwardSkipping(ctx context.Context, q queryer, after int64, onCorrupt func(error), fn func(s *segment) error) error {
	var page []*segment
	from := after + 1
	for first := true; ; first = false {
		query := `SELECT ` + segmentColumns + ` FROM journal_segments WHERE first_seq >= ?1 ORDER BY first_seq LIMIT ?2`
		if first {
			query = `SELECT ` + segmentColumns + ` FROM journal_segments WHERE ` + segmentsFrom + ` ORDER BY first_seq LIMIT ?2`
		}
		rows, err := q.QueryContext(ctx, query, from, segmentPage)
		var (
			n    int
			high int64
		)
		if page, n, high, err = scanSegmentPage(rows, err, page[:0], onCorrupt); err != nil {
			return err
		}
		if stop, err := visit(page, fn); stop || err != nil {
			return err
		}
		if n < segmentPage {
			return nil
		}
		from = high + 1
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// visit calls fn for each segment of page until it fails; stop reports that
// the scan ends (fn failed or returned errStopScan), err the failure.
func visit(page []*segment, fn func(s *segment) error) (stop bool, err error) {
	for _, s := range page {
		if err := fn(s); err != nil {
			if errors.Is(err, errStopScan) {
				return true, nil
			}
			return true, err
		}
	}
	return false, nil
}

// scanBackward calls fn for every segment, last first, until fn returns
// errStopScan.
func scanBackward(ctx context.Context, q queryer, fn func(s *segment) error) error {
	var page []*segment
	before := int64(math.MaxInt64)
	for {
		rows, err := q.QueryContext(ctx, `SELECT `+segmentColumns+` FROM journal_segments
			WHERE first_seq < ?1 ORDER BY first_seq DESC LIMIT ?2`, before, segmentPage)
		if page, err = scanSegmentRows(rows, err, page[:0]); err != nil {
			return err
		}
		if stop, err := visit(page, fn); stop || err != nil {
			return err
		}
		if len(page) < segmentPage {
			return nil
		}
		before = page[len(page)-1].first
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// segmentCacheSize is how many decoded segments a segmentCache keeps.
const segmentCacheSize = 16

// segmentCache reads single entries by seq for one read transaction,
// keeping the segments it decoded last.
type segmentCache struct {
	segs []*segment // oldest first
}

// entry returns entry seq through q, or false if the journal does not hold
// it.
func (c *segmentCache) entry(ctx context.Context, q queryer, seq int64) (*Entry, bool, error) {
	for _, s := range c.segs {
		if seq >= s.first && seq <= s.last {
			i, ok := s.find(seq)
			if !ok {
				return nil, false, nil
			}
			return &s.entries[i], true, nil
		}
	}
	rows, err := q.QueryContext(ctx, `SELECT `+segmentColumns+` FROM journal_segments WHERE first_seq =
		(SELECT max(first_seq) FROM journal_segments WHERE first_seq <= ?1) AND last_seq >= ?1`, seq)
	segs, err := scanSegmentRows(rows, err, nil)
	if err != nil || len(segs) == 0 {
		return nil, false, err
	}
	s := segs[0]
	if len(c.segs) == segmentCacheSize {
		c.segs = append(c.segs[:0], c.segs[1:]...)
	}
	c.segs = append(c.segs, s)
	i, ok := s.find(seq)
	if !ok {
		return nil, false, nil
	}
	return &s.entries[i], true, nil
}
