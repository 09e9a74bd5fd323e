package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestVerify corrupts a journal of ten rows (two of them legitimately
// pruned) through a raw connection, bypassing the store's triggers the way
// an attacker or a broken tool would, and checks what Verify reports.
func TestVerify(t *testing.T) {
	copyRow := func(from, to int64) tamper {
		return sqlTamper(fmt.Sprintf(`INSERT INTO journal_rows (%s) SELECT %d, %s FROM journal_rows WHERE seq = %d`, rowColumns, to,
			strings.TrimPrefix(rowColumns, "seq, "), from))
	}
	tests := []struct {
		name   string
		tamper []tamper
		want   []Fault
	}{
		{name: "clean"},
		{
			name:   "hash mismatch",
			tamper: []tamper{sqlTamper(`UPDATE journal_rows SET envelope = '<x/>' WHERE seq = 4`)},
			want:   []Fault{{Kind: FaultHash, Seq: 4}},
		},
		{
			name:   "gap",
			tamper: []tamper{sqlTamper(`DELETE FROM journal_rows WHERE seq IN (5, 6)`)},
			want:   []Fault{{Kind: FaultGap, Seq: 5}},
		},
		{
			name:   "single gap at the start",
			tamper: []tamper{sqlTamper(`DELETE FROM journal_rows WHERE seq = 1`)},
			want:   []Fault{{Kind: FaultGap, Seq: 1}},
		},
		{
			name:   "lost tail",
			tamper: []tamper{sqlTamper(`DELETE FROM journal_rows WHERE seq >= 9`)},
			want:   []Fault{{Kind: FaultGap, Seq: 9}},
		},
		{
			name:   "lost journal",
			tamper: []tamper{sqlTamper(`DELETE FROM journal_rows`)},
			want:   []Fault{{Kind: FaultGap, Seq: 1}, {Kind: FaultGap, Seq: 4}},
		},
		{
			name: "missing fields",
			tamper: []tamper{sqlTamper(`UPDATE journal_rows SET thread = '' WHERE seq = 7`),
				sqlTamper(`INSERT INTO journal_routes (id, direction, kind, sender, recipient, listener, root, profile)
					VALUES (900, 'sideways', 'message', 0, 0, 0, 0, 0)`),
				sqlTamper(`UPDATE journal_rows SET route = 900 WHERE seq = 8`)},
			want: []Fault{{Kind: FaultMissingField, Seq: 7}, {Kind: FaultMissingField, Seq: 8}},
		},
		{
			name: "name missing from journal_names",
			tamper: []tamper{sqlTamper(`INSERT INTO journal_routes (id, direction, kind, sender, recipient, listener, root, profile)
				SELECT 901, direction, kind, sender, recipient, listener, 999, profile FROM journal_routes
				WHERE id = (SELECT route FROM journal_rows WHERE seq = 5)`),
				sqlTamper(`UPDATE journal_rows SET route = 901 WHERE seq = 5`)},
			want: []Fault{{Kind: FaultMissingField, Seq: 5}},
		},
		{
			name:   "route missing from journal_routes",
			tamper: []tamper{sqlTamper(`UPDATE journal_rows SET route = 999 WHERE seq = 6`)},
			// The entry reads without direction, kind and sender, and its
			// route is missing.
			want: []Fault{{Kind: FaultMissingField, Seq: 6}, {Kind: FaultMissingField, Seq: 6}},
		},
		{
			name:   "entry resurrected over a tombstone",
			tamper: []tamper{copyRow(1, 2)},
			want:   []Fault{{Kind: FaultTombstoned, Seq: 2}},
		},
		{
			name:   "delivery watermark beyond the high-water mark",
			tamper: []tamper{sqlTamper(`UPDATE journal_state SET delivered_seq = 99 WHERE id = 1`)},
			want:   []Fault{{Kind: FaultHighWater, Seq: 99}},
		},
		{
			name:   "entry beyond the high-water mark",
			tamper: []tamper{copyRow(1, 11)},
			want:   []Fault{{Kind: FaultHighWater, Seq: 11}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newFakeClock()
			// Ten entries, of which the sweep deletes 2 and 3 (listener
			// tool).
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
			n, err := s.Sweep(ctx, func(l, _ string) Retention {
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
			for _, q := range []string{`DROP TRIGGER journal_append_only`, `DROP TRIGGER journal_delete_needs_tombstone`,
				`PRAGMA ignore_check_constraints = ON`} {
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
