package store

import "fmt"

// journalSegmentsV8 (migration 8) moves the journal into segments: one row
// of journal_segments per run of consecutive entries committed together,
// holding every entry's columns and canonical bytes, S2-compressed
// (journal_segment_codec.go). The migration's Go step (migrateToSegments)
// converts the rows and packs of migration 7, then drops them.
//
// Why: a SQLite row costs the writer about 3 µs however small it is (the
// record built, the B-tree insert, the bind of every column), which was
// two fifths of what journaling an envelope cost (BenchmarkJournalFlow).
// A commit's few hundred entries now take a handful of rows.
//
// A segment covers the seqs first_seq..last_seq. Every seq of that range
// is an entry of the segment or has a tombstone, and segments never
// overlap, so reading the journal in seq order is reading segments in key
// order. Retention deletes entries, never edits them: in one transaction
// it tombstones the entries and rewrites their segments without them, or
// deletes a segment whose every seq is tombstoned. Triggers hold both
// rules: a segment may only lose entries (and only entries with a
// tombstone), and is deleted only when its whole range is tombstoned.
const journalSegmentsV8 = `
CREATE TABLE journal_segments (
	first_seq INTEGER PRIMARY KEY,
	last_seq  INTEGER NOT NULL CHECK (last_seq >= first_seq),
	entries   INTEGER NOT NULL CHECK (entries > 0 AND entries <= last_seq - first_seq + 1),
	codec     INTEGER NOT NULL CHECK (codec = 2),
	data      BLOB    NOT NULL CHECK (length(data) > 0)
);
CREATE TRIGGER journal_segments_only_shrink BEFORE UPDATE ON journal_segments
WHEN NEW.first_seq <> OLD.first_seq OR NEW.last_seq <> OLD.last_seq OR NEW.entries >= OLD.entries
	OR (SELECT count(*) FROM journal_tombstones WHERE seq BETWEEN OLD.first_seq AND OLD.last_seq)
		< OLD.last_seq - OLD.first_seq + 1 - NEW.entries
BEGIN
	SELECT RAISE(ABORT, 'journal segments only lose entries, and only tombstoned ones');
END;
CREATE TRIGGER journal_segments_delete_needs_tombstones BEFORE DELETE ON journal_segments
WHEN (SELECT count(*) FROM journal_tombstones WHERE seq BETWEEN OLD.first_seq AND OLD.last_seq)
	< OLD.last_seq - OLD.first_seq + 1
BEGIN
	SELECT RAISE(ABORT, 'journal segments are deleted only after a tombstone for each of their seqs');
END;
`

// segmentMaxEntries bounds the entries of one segment.
const segmentMaxEntries = 1024

// segmentColumns are the journal_segments columns decodeSegment takes, in
// order.
const segmentColumns = `first_seq, last_seq, entries, codec, data`

// segmentsFrom selects, in journal_segments, the segments that may hold
// seqs from ?1 on: the one whose range starts at or before ?1 and every
// later one.
const segmentsFrom = `first_seq >= coalesce((SELECT max(first_seq) FROM journal_segments WHERE first_seq <= ?1), ?1)`

// segmentAtOrAfter returns the key of the segment covering seq ?1, or else
// of the first one after it.
const segmentAtOrAfter = `SELECT first_seq FROM journal_segments WHERE ` + segmentsFrom +
	` AND (last_seq >= ?1 OR first_seq > ?1) ORDER BY first_seq LIMIT 1`

// decodeRow decodes the segment in the current row of st, a query over
// segmentColumns on the writer's connection.
func (w *writer) decodeRow(st uintptr) (*segment, error) {
	return decodeSegment(w.conn.columnInt64(st, 0), w.conn.columnInt64(st, 1), w.conn.columnInt64(st, 2),
		w.conn.columnInt64(st, 3), w.conn.columnBlob(st, 4))
}

// scanSegments calls fn, in seq order, for every entry with a seq in
// [from, to), read through the writer's connection.
func (w *writer) scanSegments(from, to int64, fn func(e *Entry)) error {
	w.counters.statements.Add(1)
	var derr error
	_, err := w.conn.run(`SELECT `+segmentColumns+` FROM journal_segments WHERE `+segmentsFrom+
		` AND first_seq < ?2 ORDER BY first_seq`, []any{from, to}, func(st uintptr) {
		if derr != nil {
			return
		}
		var s *segment
		s, derr = w.decodeRow(st)
		if derr != nil {
			return
		}
		for i := range s.entries {
			if e := &s.entries[i]; e.Seq >= from && e.Seq < to {
				fn(e)
			}
		}
	})
	if err == nil {
		err = derr
	}
	if err != nil {
		return fmt.Errorf("read journal segments %d..%d: %w", from, to-1, err)
	}
	return nil
}
