package store

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestMigrationV4KeepsTheJournal builds a version-3 database holding rows,
// a tombstone and delivery marks, opens it (migrating to version 4) and
// checks the journal came through the rebuild unchanged, with its
// listeners, delivery state and append-only triggers.
func TestMigrationV4KeepsTheJournal(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	db := rawDB(t, dir)
	if _, err := migrate(ctx, db, migrations[:3], func() int64 { return 1 }); err != nil {
		t.Fatal(err)
	}
	var want []Entry
	for i := range 6 {
		e := testEntry(i, "t")
		e.Seq = int64(i + 1)
		e.Time = newFakeClock().Now().UTC()
		e.SHA256 = sha256Of(e.Bytes)
		e.Listener = []string{"a", "b", ""}[i%3]
		if i == 4 {
			e.Kind = Huh
		}
		if _, err := db.Exec(`INSERT INTO journal (seq, time_ns, thread, conversation, direction, kind, from_name, to_name,
			listener, payload_tag, sha256, bytes, diagnostics) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			e.Seq, e.Time.UnixNano(), e.Thread, e.Conversation, e.Direction.String(), e.Kind.String(), e.From, e.To,
			e.Listener, e.PayloadTag, e.SHA256[:], e.Bytes, e.Diagnostics); err != nil {
			t.Fatal(err)
		}
		if i != 2 {
			want = append(want, e)
		}
	}
	for _, q := range []string{
		`INSERT INTO journal_tombstones (seq, deleted_at, reason) VALUES (3, 1, 'retain_days(1)')`,
		`DELETE FROM journal WHERE seq = 3`,
		`INSERT INTO journal_deliveries (seq, delivered_at) VALUES (1, 1), (5, 1)`,
		`UPDATE journal_state SET high_seq = 6`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	must(t, db.Close())

	s := openAt(t, dir, Options{})
	got, err := s.After(0, 0)
	must(t, err)
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("journal after migration (-want +got):\n%s", d)
	}
	rep, err := s.Verify(ctx, nil)
	must(t, err)
	if !rep.OK() || rep.Rows != 5 || rep.Tombstones != 1 || rep.HighSeq != 6 {
		t.Errorf("Verify after migration = %+v", rep)
	}
	if d := cmp.Diff(map[string]int64{"a": 0, "b": 0, "": 0}, sweepCursorsOf(t, s)); d != "" {
		t.Errorf("journal listeners (-want +got):\n%s", d)
	}
	// Messages to a listener: 1 (a, marked), 2 (b), 4 (a), 5 is a huh.
	und, err := s.Undelivered()
	must(t, err)
	var undSeqs []int64
	for _, e := range und {
		undSeqs = append(undSeqs, e.Seq)
	}
	if d := cmp.Diff([]int64{2, 4}, undSeqs); d != "" {
		t.Errorf("Undelivered after migration (-want +got):\n%s", d)
	}
	var indexes int
	must(t, s.rdb.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name = 'journal_listener_time' OR name = 'journal_v3'`).
		Scan(&indexes))
	if indexes != 0 {
		t.Error("the listener index or the old journal table survived the migration")
	}
	if _, err := s.do(ctx, "tamper", func(w *writer) (int64, error) {
		return w.exec(`UPDATE journal SET thread = 'x' WHERE seq = 1`)
	}); err == nil {
		t.Error("the rebuilt journal accepts updates")
	}
	// The store keeps working: new seqs continue, marks advance the
	// watermark past the migrated entries.
	seq, err := s.AppendSync(ctx, testEntry(7, "t"))
	must(t, err)
	if seq != 7 {
		t.Errorf("first seq after migration = %d, want 7", seq)
	}
	for _, seq := range []int64{2, 4, 7} {
		must(t, s.MarkDelivered(seq))
	}
	flush(t, s)
	if und, err := s.Undelivered(); err != nil || len(und) != 0 {
		t.Errorf("Undelivered after marking everything = %d entries, %v", len(und), err)
	}
	if mark := deliveryWatermark(t, s); mark != 7 {
		t.Errorf("delivery watermark = %d, want 7", mark)
	}
}

// TestWriterRejectsInvalidEntries: the writer refuses, alone, an entry
// Append would have refused (the journal's columns have no CHECK
// constraints since migration 8: the writer checks instead), and journals a
// dead letter without thread and sender.
func TestWriterRejectsInvalidEntries(t *testing.T) {
	for _, tt := range []struct {
		name  string
		spoil func(e *Entry)
	}{
		{"direction", func(e *Entry) { e.Direction = 9 }},
		{"kind", func(e *Entry) { e.Kind = 0 }},
		{"thread", func(e *Entry) { e.Thread = "" }},
		{"from", func(e *Entry) { e.From = "" }},
		{"bytes", func(e *Entry) { e.Bytes = nil }},
		{"time", func(e *Entry) { e.Time = time.Time{} }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := openTest(t, Options{BatchRows: 100, BatchDelay: time.Hour})
			must(t, s.Append(testEntry(0, "t")))
			bad, err := s.prepareEntry(testEntry(1, "t"))
			must(t, err)
			tt.spoil(&bad)
			must(t, s.enqueueAsync(&op{kind: opAppend, name: "append", entry: bad}))
			must(t, s.Append(testEntry(2, "t")))
			if err := s.Flush(context.Background()); !errors.Is(err, ErrInvalid) {
				t.Fatalf("Flush = %v, want ErrInvalid", err)
			}
			if n, err := s.Count(); err != nil || n != 2 {
				t.Errorf("Count = %d, %v; want the 2 good entries", n, err)
			}
		})
	}
	s, _ := openTest(t, Options{})
	dead := testEntry(0, "")
	dead.Kind, dead.From = DeadLetter, ""
	if _, err := s.AppendSync(context.Background(), dead); err != nil {
		t.Errorf("a dead letter without thread and sender was refused: %v", err)
	}
}

// TestMigrationV6ConvertsDeliveryMarks builds a version-5 database with
// delivery marks above the watermark in two journal partitions and checks
// that migration 6 carries them into journal_delivered.
func TestMigrationV6ConvertsDeliveryMarks(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	db := rawDB(t, dir)
	if _, err := migrate(ctx, db, migrations[:5], func() int64 { return 1 }); err != nil {
		t.Fatal(err)
	}
	tx, err := db.Begin()
	must(t, err)
	const n = 1100
	for i := range n {
		e := testEntry(i, "t")
		sum := sha256Of(e.Bytes)
		if _, err := tx.Exec(`INSERT INTO journal (seq, time_ns, thread, conversation, direction, kind, from_name, to_name,
			listener, payload_tag, sha256, bytes) VALUES (?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			i+1, e.Thread, e.Conversation, e.Direction.String(), e.Kind.String(), e.From, e.To, e.Listener,
			e.PayloadTag, sum[:], e.Bytes); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{
		`INSERT INTO journal_deliveries (seq, delivered_at) VALUES (1, 1), (3, 1), (1030, 1), (1031, 1)`,
		`UPDATE journal_state SET high_seq = 1100, delivered_seq = 1`,
	} {
		if _, err := tx.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	must(t, tx.Commit())
	must(t, db.Close())

	s := openAt(t, dir, Options{})
	if d := cmp.Diff([]int64{3, 1030, 1031}, explicitMarks(t, s)); d != "" {
		t.Errorf("marks after migration (-want +got):\n%s", d)
	}
	und := undeliveredSeqs(t, s.Reader)
	if len(und) != n-4 || slices.Contains(und, 3) || slices.Contains(und, 1030) || und[0] != 2 {
		t.Errorf("Undelivered after migration: %d entries from %v", len(und), und[:min(len(und), 3)])
	}
	var tables int
	must(t, s.rdb.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name = 'journal_deliveries'`).Scan(&tables))
	if tables != 0 {
		t.Error("journal_deliveries remains after migration 6")
	}
}
