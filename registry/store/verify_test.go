package store

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestVerify corrupts a journal of ten rows (two of them legitimately
// pruned) through a raw connection, bypassing the store's triggers the way
// an attacker or a broken tool would, and checks what Verify reports.
func TestVerify(t *testing.T) {
	tests := []struct {
		name   string
		tamper []string
		want   []Fault
	}{
		{name: "clean"},
		{
			name:   "hash mismatch",
			tamper: []string{`UPDATE journal SET bytes = x'3c782f3e', pack = NULL WHERE seq = 4`},
			want:   []Fault{{Kind: FaultHash, Seq: 4}},
		},
		{
			name:   "wrong hash length",
			tamper: []string{`PRAGMA ignore_check_constraints = ON`, `UPDATE journal SET sha256 = x'00' WHERE seq = 5`},
			want:   []Fault{{Kind: FaultHash, Seq: 5}},
		},
		{
			name:   "gap",
			tamper: []string{`DELETE FROM journal WHERE seq IN (5, 6)`},
			want:   []Fault{{Kind: FaultGap, Seq: 5}},
		},
		{
			name:   "single gap at the start",
			tamper: []string{`DELETE FROM journal WHERE seq = 1`},
			want:   []Fault{{Kind: FaultGap, Seq: 1}},
		},
		{
			name:   "lost tail",
			tamper: []string{`DELETE FROM journal WHERE seq >= 9`},
			want:   []Fault{{Kind: FaultGap, Seq: 9}},
		},
		{
			name: "missing fields",
			tamper: []string{`PRAGMA ignore_check_constraints = ON`,
				`UPDATE journal SET thread = '' WHERE seq = 7`,
				`UPDATE journal SET direction = 'sideways', from_name = '' WHERE seq = 8`},
			want: []Fault{{Kind: FaultMissingField, Seq: 7}, {Kind: FaultMissingField, Seq: 8}},
		},
		{
			name:   "row resurrected over a tombstone",
			tamper: []string{`INSERT INTO journal SELECT 2, time_ns, thread, conversation, direction, kind, from_name, to_name, listener, payload_tag, sha256, bytes, diagnostics, pack FROM journal WHERE seq = 1`},
			// The copy names seq 1's pack, which does not hold seq 2.
			want: []Fault{{Kind: FaultPack, Seq: 2}, {Kind: FaultTombstoned, Seq: 2}},
		},
		{
			name: "corrupt pack",
			tamper: []string{`DROP TRIGGER journal_packs_immutable`,
				`UPDATE journal_packs SET data = x'0a00' WHERE first_seq = 1`},
			want: []Fault{{Kind: FaultPack, Seq: 1}, {Kind: FaultPack, Seq: 4}, {Kind: FaultPack, Seq: 5},
				{Kind: FaultPack, Seq: 6}, {Kind: FaultPack, Seq: 7}, {Kind: FaultPack, Seq: 8},
				{Kind: FaultPack, Seq: 9}, {Kind: FaultPack, Seq: 10}},
		},
		{
			name: "row placed in a pack that lacks it",
			tamper: []string{`INSERT INTO journal SELECT 11, time_ns, thread, conversation, direction, kind, from_name, to_name, listener, payload_tag, sha256, bytes, diagnostics, pack FROM journal WHERE seq = 10`,
				`UPDATE journal_state SET high_seq = 11`},
			want: []Fault{{Kind: FaultPack, Seq: 11}},
		},
		{
			name:   "pack without rows",
			tamper: []string{`INSERT INTO journal_packs (first_seq, last_seq, codec, data) VALUES (20, 21, 1, x'00')`},
			want:   []Fault{{Kind: FaultPack, Seq: 20}},
		},
		{
			name:   "delivery watermark beyond the high-water mark",
			tamper: []string{`UPDATE journal_state SET delivered_seq = 99 WHERE id = 1`},
			want:   []Fault{{Kind: FaultHighWater, Seq: 99}},
		},
		{
			name:   "row beyond the high-water mark",
			tamper: []string{`INSERT INTO journal SELECT 11, time_ns, thread, conversation, direction, kind, from_name, to_name, listener, payload_tag, sha256, bytes, diagnostics, pack FROM journal WHERE seq = 1`},
			want:   []Fault{{Kind: FaultPack, Seq: 11}, {Kind: FaultHighWater, Seq: 11}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newFakeClock()
			// One batch: seqs 2 and 3 (listener tool) in one pack, the
			// others in pack 1.
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
			for _, q := range append([]string{`DROP TRIGGER journal_append_only`,
				`DROP TRIGGER journal_delete_needs_tombstone`}, tt.tamper...) {
				if _, err := conn.ExecContext(ctx, q); err != nil {
					t.Fatalf("tamper %q: %v", q, err)
				}
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
