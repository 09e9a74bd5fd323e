package store

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"
)

const extSchema = `CREATE TABLE IF NOT EXISTS ext_rows (k TEXT PRIMARY KEY, v INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS ext_rows_v ON ext_rows (v);`

// extHas reports whether the read pool sees ext_rows row k.
func extHas(t *testing.T, s *Store, k string) bool {
	t.Helper()
	var n int
	must(t, s.ReadDB().QueryRow(`SELECT count(*) FROM ext_rows WHERE k = ?`, k).Scan(&n))
	return n == 1
}

// insertExt is an extension write inserting row k.
func insertExt(k string) func(*Tx) error {
	return func(tx *Tx) error {
		_, err := tx.Exec(`INSERT INTO ext_rows (k, v) VALUES (?, 1)`, k)
		return err
	}
}

// waitDone waits (30 s at most) for a done callback's outcome.
func waitDone(t *testing.T, ch <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no outcome in 30s", what)
		return nil
	}
}

// TestExtensionWrites: an extension's tables are created by AddSchema and
// written by the writer in queue order with the journal — a row queued
// before an append is durable once the append is — and its reads go
// through the read pool. A failing write fails alone, to its done, not to
// Flush; WriteNow commits without waiting for the batch delay.
func TestExtensionWrites(t *testing.T) {
	s, _ := openTest(t, Options{BatchDelay: time.Hour}) // only urgent writes and waits commit
	ctx := context.Background()
	for range 2 { // idempotent
		must(t, s.AddSchema(ctx, "ext", extSchema))
	}

	must(t, s.Write(ctx, "insert a", insertExt("a")))
	if !extHas(t, s, "a") {
		t.Fatal("a synchronous write is not visible once it returned")
	}

	// Ordered with the journal: queued before an append, durable with it.
	done := make(chan error, 1)
	must(t, s.WriteAsync("insert b", insertExt("b"), func(err error) { done <- err }))
	seq, err := s.AppendSeq(testEntry(1, "thread-1"))
	must(t, err)
	must(t, s.WaitDurable(ctx, seq))
	if !extHas(t, s, "b") {
		t.Fatal("a write queued before a journal append is not durable once the append is")
	}
	must(t, waitDone(t, done, "insert b"))

	// A failing write fails alone, reported to its done and not to Flush.
	failed, fine := make(chan error, 1), make(chan error, 1)
	must(t, s.WriteAsync("insert a again", insertExt("a"), func(err error) { failed <- err }))
	must(t, s.WriteAsync("insert c", insertExt("c"), func(err error) { fine <- err }))
	var inTx int
	must(t, s.Write(ctx, "insert d", func(tx *Tx) error {
		if err := insertExt("d")(tx); err != nil {
			return err
		}
		return tx.Query(`SELECT count(*) FROM ext_rows WHERE k = 'd'`, nil, func(r *sql.Rows) error { return r.Scan(&inTx) })
	}))
	if inTx != 1 {
		t.Fatalf("a write's query saw %d of its own rows, want 1", inTx)
	}
	if err := waitDone(t, failed, "insert a again"); err == nil {
		t.Fatal("a duplicate key was committed")
	}
	must(t, waitDone(t, fine, "insert c"))
	for _, k := range []string{"c", "d"} {
		if !extHas(t, s, k) {
			t.Fatalf("row %s was lost with the failing write of its batch", k)
		}
	}
	must(t, s.Flush(ctx))

	// WriteNow commits at once although the batch delay is an hour.
	now := make(chan error, 1)
	must(t, s.WriteNow("insert e", insertExt("e"), func(err error) { now <- err }))
	must(t, waitDone(t, now, "insert e"))
	if !extHas(t, s, "e") {
		t.Fatal("WriteNow's done came before its row was visible")
	}

	must(t, s.Close())
	if err := s.Write(ctx, "after close", insertExt("f")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Write after Close: %v, want ErrClosed", err)
	}
}

// TestExtensionSchemaError: a schema that does not apply is an error, and
// the store stays usable.
func TestExtensionSchemaError(t *testing.T) {
	s, _ := openTest(t, Options{})
	ctx := context.Background()
	if err := s.AddSchema(ctx, "bad", `CREATE TABLE ext_bad (`); err == nil {
		t.Fatal("a malformed schema was applied")
	}
	must(t, s.AddSchema(ctx, "ext", extSchema))
	must(t, s.Write(ctx, "insert", insertExt("a")))
}
