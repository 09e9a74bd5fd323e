package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/klauspost/compress/s2"
)

// segmentEntries returns n valid entries from seq first on, with bodies of
// size bytes.
func segmentEntries(first int64, n, size int) []Entry {
	var out []Entry
	for i := range n {
		e := testEntry(i, fmt.Sprintf("thread-%d", i%3))
		e.Seq = first + int64(i)
		e.Time = time.Unix(1700000000+int64(i), int64(i)).UTC()
		e.Bytes = bytes.Repeat(fmt.Appendf(nil, "<m n=\"%d\"/>", i), size/8+1)[:size]
		e.SHA256 = sha256Of(e.Bytes)
		e.Diagnostics = fmt.Sprint("repaired ", i)
		out = append(out, e)
	}
	return out
}

// TestSegmentRoundTrip: decodeSegment returns what encode wrote.
func TestSegmentRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		es   []Entry
	}{
		{name: "one", es: segmentEntries(7, 1, 40)},
		{name: "bodies above 127 bytes need two-byte lengths", es: segmentEntries(1, 3, 5000)},
		{name: "a full segment", es: segmentEntries(1000, segmentMaxEntries, 411)},
		{name: "holes after retention", es: func() []Entry {
			es := segmentEntries(100, 6, 50)
			return append(es[1:3], es[5])
		}()},
		{name: "time going backwards", es: func() []Entry {
			es := segmentEntries(1, 3, 50)
			es[1].Time = es[0].Time.Add(-time.Hour)
			return es
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first := max(1, tt.es[0].Seq-1) // below the first entry where seqs allow
			last := tt.es[len(tt.es)-1].Seq
			s, err := decodeSegment(first, last, int64(len(tt.es)), segmentCodecS2, encodeEntries(first, tt.es))
			must(t, err)
			if d := cmp.Diff(tt.es, s.entries); d != "" {
				t.Errorf("entries (-want +got):\n%s", d)
			}
			if _, ok := s.find(last + 1); ok {
				t.Error("found a seq the segment does not hold")
			}
		})
	}
}

// TestDecodeSegmentRejects: decodeSegment refuses what encode never writes.
func TestDecodeSegmentRejects(t *testing.T) {
	es := segmentEntries(5, 2, 3)
	valid := encodeEntries(5, es)
	raw, err := s2.Decode(nil, valid)
	must(t, err)
	bodies := len(raw) - 6
	tests := []struct {
		name              string
		first, last, n, c int64
		data              []byte
	}{
		{name: "range starting below 1", first: 0, last: 6, n: 2, c: 2, data: valid},
		{name: "empty range", first: 5, last: 4, n: 2, c: 2, data: valid},
		{name: "unknown codec", first: 5, last: 6, n: 2, c: 1, data: valid},
		{name: "not S2", first: 5, last: 6, n: 2, c: 2, data: []byte("<message/>")},
		{name: "truncated block", first: 5, last: 6, n: 2, c: 2, data: valid[:len(valid)-1]},
		{name: "count differs from the row", first: 5, last: 6, n: 3, c: 2, data: valid},
		{name: "seq beyond the range", first: 5, last: 5, n: 2, c: 2, data: valid},
		{name: "truncated header", first: 5, last: 6, n: 2, c: 2, data: s2.Encode(nil, raw[:40])},
		{name: "bodies short", first: 5, last: 6, n: 2, c: 2, data: s2.Encode(nil, raw[:bodies+5])},
		{name: "bodies long", first: 5, last: 6, n: 2, c: 2, data: s2.Encode(nil, append(bytes.Clone(raw), 'x'))},
		{name: "seqs not ascending", first: 5, last: 6, n: 2, c: 2, data: encodeEntries(5, []Entry{es[1], es[0]})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if s, err := decodeSegment(tt.first, tt.last, tt.n, tt.c, tt.data); !errors.Is(err, errCorruptSegment) {
				t.Errorf("decodeSegment = %+v, %v; want errCorruptSegment", s, err)
			}
		})
	}
	if _, err := decodeSegment(5, 6, 2, segmentCodecS2, valid); err != nil {
		t.Errorf("the valid segment: %v", err)
	}
}

// FuzzDecodeSegment: a segment read from a damaged or tampered database
// decodes or fails with errCorruptSegment, never panics, and whatever
// decodes holds the stated count of ascending seqs in range, with bytes.
func FuzzDecodeSegment(f *testing.F) {
	f.Add(int64(5), int64(7), int64(3), encodeEntries(5, segmentEntries(5, 3, 20)))
	f.Add(int64(1), int64(1), int64(1), encodeEntries(1, segmentEntries(1, 1, 1)))
	f.Add(int64(1), int64(9), int64(2), []byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, first, last, n int64, data []byte) {
		s, err := decodeSegment(first, last, n, segmentCodecS2, data)
		if err != nil {
			if !errors.Is(err, errCorruptSegment) {
				t.Fatalf("error %v is not errCorruptSegment", err)
			}
			return
		}
		if int64(len(s.entries)) != n {
			t.Fatalf("%d entries, row says %d", len(s.entries), n)
		}
		for i, e := range s.entries {
			if e.Seq < first || e.Seq > last || (i > 0 && e.Seq <= s.entries[i-1].Seq) || len(e.Bytes) == 0 {
				t.Fatalf("entry %d: seq %d in %d..%d, %d bytes", i, e.Seq, first, last, len(e.Bytes))
			}
		}
	})
}

// segmentRows returns the (first_seq, entries) of every stored segment.
func segmentRows(t *testing.T, s *Store) [][2]int64 {
	t.Helper()
	rows, err := s.rdb.Query(`SELECT first_seq, entries FROM journal_segments ORDER BY first_seq`)
	must(t, err)
	defer rows.Close()
	var out [][2]int64
	for rows.Next() {
		var r [2]int64
		must(t, rows.Scan(&r[0], &r[1]))
		out = append(out, r)
	}
	must(t, rows.Err())
	return out
}

// TestSegmentsFollowRetention: a commit's entries share a segment whatever
// their listener; retention removes the entries it deletes from the
// segment (they are tombstoned, the rest kept unchanged) and deletes the
// segment with its last entry.
func TestSegmentsFollowRetention(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	s, _ := openTest(t, Options{Clock: clock.Now, BatchRows: 100, BatchDelay: time.Hour})
	for i := range 6 {
		e := testEntry(i, "t")
		if i%2 == 1 {
			e.Listener = "tool"
		}
		must(t, s.Append(e))
	}
	flush(t, s)
	for _, seq := range []int64{2, 4} {
		must(t, s.MarkDelivered(seq))
	}
	flush(t, s)
	if d := cmp.Diff([][2]int64{{1, 6}}, segmentRows(t, s)); d != "" {
		t.Fatalf("segments before the sweep (-want +got):\n%s", d)
	}
	policy := func(l string) Retention {
		if l == "tool" {
			return Retention{Policy: PruneOnDelivery}
		}
		return Retention{Policy: RetainDays, Days: 1}
	}
	n, err := s.Sweep(ctx, policy)
	must(t, err)
	if n != 2 {
		t.Fatalf("first sweep deleted %d, want 2", n)
	}
	if d := cmp.Diff([][2]int64{{1, 4}}, segmentRows(t, s)); d != "" {
		t.Errorf("segments after pruning (-want +got):\n%s", d)
	}
	entries, err := s.After(0, 0)
	must(t, err)
	var seqs []int64
	for _, e := range entries {
		seqs = append(seqs, e.Seq)
		if sha256Of(e.Bytes) != e.SHA256 {
			t.Errorf("seq %d changed in the rewrite", e.Seq)
		}
	}
	if d := cmp.Diff([]int64{1, 3, 5, 6}, seqs); d != "" {
		t.Errorf("entries after pruning (-want +got):\n%s", d)
	}
	must(t, s.MarkDelivered(6))
	flush(t, s)
	clock.Advance(48 * time.Hour)
	if n, err = s.Sweep(ctx, policy); err != nil || n != 4 {
		t.Fatalf("second sweep = %d, %v; want 4", n, err)
	}
	if got := segmentRows(t, s); len(got) != 0 {
		t.Errorf("segments left: %v", got)
	}
	rep, err := s.Verify(ctx, nil)
	must(t, err)
	if !rep.OK() || rep.Tombstones != 6 || rep.Rows != 0 {
		t.Errorf("Verify = %+v", rep)
	}
}

// TestMigrationV8MovesTheJournalIntoSegments builds a version-7 database
// with inline and packed rows and a pruned seq, opens it (migrating to
// version 8) and checks every entry came through unchanged and verifies.
func TestMigrationV8MovesTheJournalIntoSegments(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := rawDB(t, dir)
	_, err := migrate(ctx, db, migrations[:7], func() int64 { return 1 })
	must(t, err)
	es := segmentEntries(1, 8, 300)
	es[7].Kind, es[7].Thread, es[7].From = DeadLetter, "", ""
	pack, _ := encodePack(nil, nil, []int64{2, 3, 5}, [][]byte{es[1].Bytes, es[2].Bytes, es[4].Bytes})
	must(t, execDB(db, `INSERT INTO journal_packs (first_seq, last_seq, codec, data) VALUES (2, 5, 1, ?)`, pack))
	for i, e := range es {
		if e.Seq == 4 {
			continue // pruned
		}
		var body any = e.Bytes
		var packKey any
		if i == 1 || i == 2 || i == 4 {
			body, packKey = nil, int64(2)
		}
		must(t, execDB(db, `INSERT INTO journal (seq, time_ns, thread, conversation, direction, kind, from_name, to_name,
			listener, payload_tag, sha256, bytes, diagnostics, pack) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			e.Seq, e.Time.UnixNano(), e.Thread, e.Conversation, e.Direction.String(), e.Kind.String(), e.From, e.To,
			e.Listener, e.PayloadTag, e.SHA256[:], body, e.Diagnostics, packKey))
	}
	must(t, execDB(db, `INSERT INTO journal_tombstones (seq, deleted_at, reason) VALUES (4, 1, 'test')`))
	must(t, execDB(db, `UPDATE journal_state SET high_seq = 8`))
	db.Close()

	s := openAt(t, dir, Options{})
	got, err := s.After(0, 0)
	must(t, err)
	want := append(append([]Entry{}, es[:3]...), es[4:]...)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("entries (-want +got):\n%s", d)
	}
	if d := cmp.Diff([][2]int64{{1, 3}, {5, 4}}, segmentRows(t, s)); d != "" {
		t.Errorf("segments (-want +got):\n%s", d)
	}
	var tables int
	must(t, s.rdb.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name IN ('journal', 'journal_packs')`).Scan(&tables))
	if tables != 0 {
		t.Errorf("%d of the old journal tables are left", tables)
	}
	rep, err := s.Verify(ctx, nil)
	must(t, err)
	if !rep.OK() {
		t.Errorf("Verify: %v", rep.Faults)
	}
	// The journal goes on from the migrated high-water mark.
	seq, err := s.AppendSeq(testEntry(9, "after"))
	must(t, err)
	if seq != 9 {
		t.Errorf("next seq = %d, want 9", seq)
	}
}

// execDB runs one statement on db.
func execDB(db *sql.DB, q string, args ...any) error {
	_, err := db.Exec(q, args...)
	return err
}
