package store

import (
	"context"
	"database/sql"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestVerify corrupts a journal of ten rows (two of them legitimately
// pruned) through a raw connection, bypassing the store's triggers the way
// an attacker or a broken tool would, and checks what Verify reports.
func TestVerify(t *testing.T) {
	// drop removes the entries seqs from segment 1.
	drop := func(seqs ...int64) tamper {
		return rewrite(1, func(es []Entry) []Entry {
			return slices.DeleteFunc(es, func(e Entry) bool { return slices.Contains(seqs, e.Seq) })
		})
	}
	// edit changes entry seq of segment 1.
	edit := func(seq int64, fn func(e *Entry)) tamper {
		return rewrite(1, func(es []Entry) []Entry {
			for i := range es {
				if es[i].Seq == seq {
					fn(&es[i])
				}
			}
			return es
		})
	}
	tests := []struct {
		name   string
		tamper []tamper
		want   []Fault
	}{
		{name: "clean"},
		{
			name:   "hash mismatch",
			tamper: []tamper{edit(4, func(e *Entry) { e.Bytes = []byte("<x/>") })},
			want:   []Fault{{Kind: FaultHash, Seq: 4}},
		},
		{
			name:   "gap",
			tamper: []tamper{drop(5, 6)},
			want:   []Fault{{Kind: FaultGap, Seq: 5}},
		},
		{
			name:   "single gap at the start",
			tamper: []tamper{drop(1)},
			want:   []Fault{{Kind: FaultGap, Seq: 1}},
		},
		{
			name:   "lost tail",
			tamper: []tamper{drop(9, 10)},
			want:   []Fault{{Kind: FaultGap, Seq: 9}},
		},
		{
			name:   "lost segment",
			tamper: []tamper{sqlTamper(`DELETE FROM journal_segments`)},
			want:   []Fault{{Kind: FaultGap, Seq: 1}, {Kind: FaultGap, Seq: 4}},
		},
		{
			name: "missing fields",
			tamper: []tamper{edit(7, func(e *Entry) { e.Thread = "" }),
				edit(8, func(e *Entry) { e.Direction, e.From = 0, "" })},
			want: []Fault{{Kind: FaultMissingField, Seq: 7}, {Kind: FaultMissingField, Seq: 8}},
		},
		{
			name: "entry resurrected over a tombstone",
			tamper: []tamper{rewrite(1, func(es []Entry) []Entry {
				e := es[0]
				e.Seq = 2
				return slices.Insert(es, 1, e)
			})},
			want: []Fault{{Kind: FaultTombstoned, Seq: 2}},
		},
		{
			name:   "corrupt segment",
			tamper: []tamper{sqlTamper(`UPDATE journal_segments SET data = x'0a00' WHERE first_seq = 1`)},
			want:   []Fault{{Kind: FaultSegment, Seq: 1}},
		},
		{
			name:   "overlapping segments",
			tamper: []tamper{copySegment(10, 10, 10)},
			want:   []Fault{{Kind: FaultSegment, Seq: 10}, {Kind: FaultSegment, Seq: 10}},
		},
		{
			name:   "delivery watermark beyond the high-water mark",
			tamper: []tamper{sqlTamper(`UPDATE journal_state SET delivered_seq = 99 WHERE id = 1`)},
			want:   []Fault{{Kind: FaultHighWater, Seq: 99}},
		},
		{
			name:   "entry beyond the high-water mark",
			tamper: []tamper{copySegment(1, 11, 11)},
			want:   []Fault{{Kind: FaultHighWater, Seq: 11}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newFakeClock()
			// One batch, so one segment: 1..10, of which the sweep
			// deletes 2 and 3 (listener tool).
			s, dir := openTest(t, Options{Clock: clock.Now, BatchRows: 100000, BatchDelay: time.Hour})
			ctx := context.Background()
			for i := range 10 {
				e := testEntry(i, "t")
				if i == 1 || i == 2 {
					e.Listener = "tool"
				}
				must(t, s.Append(e))
			}
			flush(t, s)
			must(t, s.MarkDelivered(2))
			must(t, s.MarkDelivered(3))
			flush(t, s)
			n, err := s.Sweep(ctx, func(l string) Retention {
				if l == "tool" {
					return Retention{Policy: PruneOnDelivery}
				}
				return Retention{}
			})
			must(t, err)
			if n != 2 {
				t.Fatalf("setup sweep deleted %d, want 2", n)
			}
			must(t, s.Close())

			db := rawDB(t, dir)
			conn, err := db.Conn(ctx)
			must(t, err)
			for _, q := range []string{`DROP TRIGGER journal_segments_only_shrink`,
				`DROP TRIGGER journal_segments_delete_needs_tombstones`} {
				if _, err := conn.ExecContext(ctx, q); err != nil {
					t.Fatalf("tamper %q: %v", q, err)
				}
			}
			for _, tamper := range tt.tamper {
				tamper(t, conn)
			}
			conn.Close()
			db.Close()

			s = openAt(t, dir, Options{})
			var calls, lastDone, lastTotal int64
			rep, err := s.Verify(ctx, func(done, total int64) { calls++; lastDone, lastTotal = done, total })
			must(t, err)
			if calls == 0 || lastDone != lastTotal || lastTotal != rep.Rows+rep.Tombstones {
				t.Errorf("progress: %d calls, last (%d, %d), want final done == total == %d",
					calls, lastDone, lastTotal, rep.Rows+rep.Tombstones)
			}
			if rep.Tombstones != 2 {
				t.Errorf("Tombstones = %d, want 2", rep.Tombstones)
			}
			ignoreDetail := cmpopts.IgnoreFields(Fault{}, "Detail")
			if d := cmp.Diff(tt.want, rep.Faults, ignoreDetail, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("faults (-want +got):\n%s", d)
			}
			for _, f := range rep.Faults {
				if f.Detail == "" {
					t.Errorf("fault %v has no detail", f)
				}
			}
			if rep.OK() != (len(tt.want) == 0) {
				t.Errorf("OK() = %v with faults %v", rep.OK(), rep.Faults)
			}
		})
	}
}

func TestVerifyGapDetail(t *testing.T) {
	if got := gapFault(5, 9).Detail; got != "seqs 5..9 (5) are missing without tombstones" {
		t.Errorf("gap detail = %q", got)
	}
	if got := gapFault(3, 3).Detail; got != "seq 3 is missing without a tombstone" {
		t.Errorf("gap detail = %q", got)
	}
}

func TestVerifyCancelled(t *testing.T) {
	s, _ := openTest(t, Options{BatchDelay: time.Hour})
	for i := range progressEvery + 10 {
		must(t, s.Append(testEntry(i, "t")))
	}
	flush(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	_, err := s.Verify(ctx, func(done, total int64) { cancel() })
	if err == nil {
		t.Fatal("Verify ignored a cancelled context")
	}
}

// tamper changes a closed store's database behind its back.
type tamper func(t *testing.T, conn *sql.Conn)

// sqlTamper runs a statement.
func sqlTamper(q string) tamper {
	return func(t *testing.T, conn *sql.Conn) {
		t.Helper()
		if _, err := conn.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("tamper %q: %v", q, err)
		}
	}
}

// readSegment reads and decodes segment key.
func readSegment(t *testing.T, conn *sql.Conn, key int64) *segment {
	t.Helper()
	rows, err := conn.QueryContext(context.Background(), `SELECT `+segmentColumns+` FROM journal_segments WHERE first_seq = ?`, key)
	segs, err := scanSegmentRows(rows, err, nil)
	must(t, err)
	if len(segs) != 1 {
		t.Fatalf("segment %d: %d rows", key, len(segs))
	}
	return segs[0]
}

// encodeEntries encodes es as the data of a segment starting at first.
func encodeEntries(first int64, es []Entry) []byte {
	ptrs := make([]*Entry, len(es))
	for i := range es {
		ptrs[i] = &es[i]
	}
	var enc segmentEncoder
	return enc.encode(nil, first, ptrs)
}

// rewrite replaces the entries of segment key by what fn makes of them,
// keeping its range.
func rewrite(key int64, fn func(es []Entry) []Entry) tamper {
	return func(t *testing.T, conn *sql.Conn) {
		t.Helper()
		s := readSegment(t, conn, key)
		es := fn(slices.Clone(s.entries))
		if _, err := conn.ExecContext(context.Background(), `UPDATE journal_segments SET entries = ?, data = ? WHERE first_seq = ?`,
			len(es), encodeEntries(key, es), key); err != nil {
			t.Fatal(err)
		}
	}
}

// copySegment inserts a segment first..first holding a copy of entry seq
// (of segment 1) renumbered first; last is the new segment's last seq.
func copySegment(seq, first, last int64) tamper {
	return func(t *testing.T, conn *sql.Conn) {
		t.Helper()
		s := readSegment(t, conn, 1)
		i, ok := s.find(seq)
		if !ok {
			t.Fatalf("segment 1 lacks seq %d", seq)
		}
		e := s.entries[i]
		e.Seq = first
		if _, err := conn.ExecContext(context.Background(), `INSERT INTO journal_segments (`+segmentColumns+`) VALUES (?, ?, 1, ?, ?)`,
			first, last, segmentCodecS2, encodeEntries(first, []Entry{e})); err != nil {
			t.Fatal(err)
		}
	}
}
