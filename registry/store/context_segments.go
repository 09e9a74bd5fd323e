package store

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// contextSegmentsSchema keeps the context tiers (seed 000 §6):
// what an agent's librarian decided about the segments of a thread's
// history — expanded, folded (with the fold summary) or evicted. The
// content itself stays in slots, never changed: a segment row is metadata
// over slots (thread, idx…), and goes with them (DeleteSegments, called
// with DeleteSlots).
//
//	SELECT idx, tier, relevance, bytes, tokens, summary FROM context_segments WHERE thread = ? ORDER BY idx;
const contextSegmentsSchema = `
CREATE TABLE IF NOT EXISTS context_segments (
	thread       TEXT    NOT NULL,
	idx          INTEGER NOT NULL CHECK (idx >= 0),
	slots        TEXT    NOT NULL,
	content_type TEXT    NOT NULL DEFAULT '',
	tier         TEXT    NOT NULL CHECK (tier IN ('expanded', 'folded', 'evicted')),
	relevance    REAL    NOT NULL DEFAULT 0 CHECK (relevance >= 0 AND relevance <= 1),
	scored       INTEGER NOT NULL DEFAULT 0,
	summary      TEXT    NOT NULL DEFAULT '',
	summary_by   TEXT    NOT NULL DEFAULT '',
	bytes        INTEGER NOT NULL DEFAULT 0,
	tokens       INTEGER NOT NULL DEFAULT 0,
	changed_ns   INTEGER,
	PRIMARY KEY (thread, idx)
) WITHOUT ROWID;
`

// SegmentRow is one context segment as the store keeps it (see
// registry.Segment).
type SegmentRow struct {
	// Thread and Index name it: the thread and its first slot.
	Thread string
	Index  int
	// Slots are the slot indices it covers, ascending, Index first.
	Slots []int
	// ContentType classifies it (message, reply, tool_call, note).
	ContentType string
	// Tier is expanded, folded or evicted.
	Tier string
	// Relevance (0…1) is its score at the last recorded change; Scored
	// says it was scored.
	Relevance float64
	Scored    bool
	// Summary is the fold summary and SummaryBy what wrote it.
	Summary, SummaryBy string
	// Bytes and Tokens are the size of its content and the estimate of its
	// tokens.
	Bytes, Tokens int
	// Changed is when its tier last changed.
	Changed time.Time
}

// validate checks what the table requires.
func (r *SegmentRow) validate() error {
	switch {
	case r.Thread == "" || r.Index < 0:
		return fmt.Errorf("%w: segment row needs a thread and index >= 0 (thread %q, index %d)", ErrInvalid, r.Thread, r.Index)
	case r.Tier != "expanded" && r.Tier != "folded" && r.Tier != "evicted":
		return fmt.Errorf("%w: segment %s/%d: tier %q", ErrInvalid, r.Thread, r.Index, r.Tier)
	case math.IsNaN(r.Relevance) || r.Relevance < 0 || r.Relevance > 1:
		return fmt.Errorf("%w: segment %s/%d: relevance %v", ErrInvalid, r.Thread, r.Index, r.Relevance)
	case len(r.Slots) == 0 || r.Slots[0] != r.Index:
		return fmt.Errorf("%w: segment %s/%d: slots %v do not begin at its index", ErrInvalid, r.Thread, r.Index, r.Slots)
	}
	return nil
}

// PutSegment enqueues an insert-or-replace of the segment (thread, index).
// Asynchronous, ordered with the slot writes: a segment put after its
// slots is committed with or after them. Like slot writes, segment writes
// sharing a batch are coalesced to their final state.
func (s *Store) PutSegment(r SegmentRow) error {
	if err := r.validate(); err != nil {
		return err
	}
	at, err := encodeTime("changed", r.Changed)
	if err != nil {
		return err
	}
	return s.enqueueAsync(&op{kind: opPut, name: "put segment", table: segmentsTable,
		key: r.Thread + "\x00" + strconv.Itoa(r.Index), group: r.Thread,
		row: []any{r.Thread, int64(r.Index), joinInts(r.Slots), r.ContentType, r.Tier, r.Relevance, r.Scored,
			r.Summary, r.SummaryBy, int64(r.Bytes), int64(r.Tokens), at}})
}

// DeleteSegments enqueues the deletion of every segment of thread (with its
// slots: DeleteSlots). Like DeleteSlots it is a kernel-state write, so a
// thread's end does not cut its batch's bulk statements short.
func (s *Store) DeleteSegments(thread string) error {
	return s.enqueueAsync(&op{kind: opDelete, name: "delete segments", table: segmentsTable,
		groups: []string{thread}})
}

// LoadSegments returns every committed segment ordered by thread and index.
func (s *Store) LoadSegments() ([]SegmentRow, error) {
	return load(context.Background(), s, "load segments", `SELECT thread, idx, slots, content_type, tier, relevance,
		scored, summary, summary_by, bytes, tokens, changed_ns FROM context_segments ORDER BY thread, idx`, nil,
		func(rows *sql.Rows) (SegmentRow, error) {
			var (
				r     SegmentRow
				slots string
				at    sql.NullInt64
			)
			if err := rows.Scan(&r.Thread, &r.Index, &slots, &r.ContentType, &r.Tier, &r.Relevance, &r.Scored,
				&r.Summary, &r.SummaryBy, &r.Bytes, &r.Tokens, &at); err != nil {
				return r, err
			}
			var err error
			if r.Slots, err = splitInts(slots); err != nil {
				return r, fmt.Errorf("%s/%d: slots %q: %w", r.Thread, r.Index, slots, err)
			}
			r.Changed = decodeTime(at)
			return r, nil
		})
}

// joinInts writes ns as "1,3,4".
func joinInts(ns []int) string {
	b := make([]byte, 0, len(ns)*4)
	for i, n := range ns {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(n), 10)
	}
	return string(b)
}

// splitInts reads what joinInts wrote.
func splitInts(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	parts := strings.Split(s, ",")
	out := make([]int, len(parts))
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}
