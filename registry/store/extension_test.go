package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
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

// extGather defers ext_rows inserts to the end of their run (Tx.AtEnd) and
// writes them in one statement, as an extension coalescing its rows does.
type extGather struct {
	tx    *Tx
	keys  []string
	order []string // what ran, in order: "write k", "end k1,k2…"
}

// insert is an extension write that defers the insert of row k.
func (g *extGather) insert(k string) func(*Tx) error {
	return func(tx *Tx) error {
		g.order = append(g.order, "write "+k)
		if g.tx != tx { // the first deferred row of this run
			g.tx, g.keys = tx, g.keys[:0]
			tx.AtEnd(g.flush)
		}
		g.keys = append(g.keys, k)
		return nil
	}
}

func (g *extGather) flush(tx *Tx) error {
	g.tx = nil
	g.order = append(g.order, "end "+strings.Join(g.keys, ","))
	q := `INSERT INTO ext_rows (k, v) VALUES ` + strings.TrimSuffix(strings.Repeat("(?, 1), ", len(g.keys)), ", ")
	args := make([]any, len(g.keys))
	for i, k := range g.keys {
		args[i] = k
	}
	_, err := tx.Exec(q, args...)
	return err
}

// TestExtensionAtEnd: the rows an extension's writes defer (Tx.AtEnd) are
// written once, after every write of the run, in the same commit — each
// write's done told once it is durable — and a deferred statement that
// fails fails its batch, retried write by write so that only the write
// whose row is bad fails.
func TestExtensionAtEnd(t *testing.T) {
	s, _ := openTest(t, Options{BatchDelay: time.Hour}) // only the synchronous write commits
	ctx := context.Background()
	must(t, s.AddSchema(ctx, "ext", extSchema))
	g := &extGather{}
	var dones []chan error
	for _, k := range []string{"a", "b", "c"} {
		done := make(chan error, 1)
		must(t, s.WriteAsync("defer "+k, g.insert(k), func(err error) { done <- err }))
		dones = append(dones, done)
	}
	before := s.Statements()
	must(t, s.Write(ctx, "defer d", g.insert("d")))
	for i, done := range dones {
		must(t, waitDone(t, done, fmt.Sprint("write ", i)))
	}
	want := []string{"write a", "write b", "write c", "write d", "end a,b,c,d"}
	if diff := cmp.Diff(want, g.order); diff != "" {
		t.Fatalf("what ran (-want +got):\n%s", diff)
	}
	for _, k := range []string{"a", "b", "c", "d"} {
		if !extHas(t, s, k) {
			t.Fatalf("deferred row %s is not durable once its write's commit is", k)
		}
	}
	// BEGIN, the one INSERT, COMMIT (and nothing per row).
	if n := s.Statements() - before; n > 3 {
		t.Fatalf("%d statements for four deferred rows, want one INSERT (3 with BEGIN and COMMIT)", n)
	}

	// "a" again makes the batch's INSERT fail: retried write by write, only
	// its write fails.
	g.order = nil
	bad := make(chan error, 1)
	must(t, s.WriteAsync("defer a again", g.insert("a"), func(err error) { bad <- err }))
	must(t, s.Write(ctx, "defer e", g.insert("e")))
	if err := waitDone(t, bad, "defer a again"); err == nil {
		t.Fatal("a deferred row with a duplicate key was committed")
	}
	if !extHas(t, s, "e") {
		t.Fatal("row e was lost with the failing deferred row of its batch")
	}
	want = []string{"write a", "write e", "end a,e", "write a", "end a", "write e", "end e"}
	if diff := cmp.Diff(want, g.order); diff != "" {
		t.Fatalf("what ran (-want +got):\n%s", diff)
	}
}
