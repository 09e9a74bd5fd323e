package store

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestStatementCounts: the writer counts each statement it runs and the
// rows those runs changed, by query text, so that the difference of two
// snapshots says which tables a piece of work wrote and how much.
func TestStatementCounts(t *testing.T) {
	s, _ := openTest(t, Options{})
	ctx := context.Background()
	must(t, s.AddSchema(ctx, "ext", extSchema))
	const (
		insert = `INSERT INTO ext_rows (k, v) VALUES (?, 1), (?, 1)`
		update = `UPDATE ext_rows SET v = 2 WHERE k = ?`
		del    = `DELETE FROM ext_rows WHERE v = 1`
		query  = `SELECT k FROM ext_rows`
	)
	before := s.StatementCounts()
	must(t, s.Write(ctx, "counted", func(tx *Tx) error {
		for _, k := range []string{"a", "c"} {
			if _, err := tx.Exec(insert, k, k+k); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(update, "a"); err != nil {
			return err
		}
		if _, err := tx.Exec(del); err != nil {
			return err
		}
		return tx.Query(query, nil, func(*sql.Rows) error { return nil })
	}))
	got := map[string]StatementCount{}
	for _, c := range s.StatementCounts() {
		got[c.Query] = c
	}
	for _, b := range before {
		c := got[b.Query]
		c.Runs -= b.Runs
		c.Rows -= b.Rows
		if c.Runs == 0 && c.Rows == 0 {
			delete(got, b.Query)
			continue
		}
		got[b.Query] = c
	}
	want := map[string]StatementCount{
		insert: {Query: insert, Runs: 2, Rows: 4},
		update: {Query: update, Runs: 1, Rows: 1},
		del:    {Query: del, Runs: 1, Rows: 3},
		query:  {Query: query, Runs: 1},
	}
	// The transaction's own statements (BEGIN, COMMIT) are counted too.
	for q, c := range got {
		if strings.HasPrefix(q, "BEGIN") || strings.HasPrefix(q, "COMMIT") {
			if c.Runs < 1 {
				t.Errorf("%q ran %d times", q, c.Runs)
			}
			delete(got, q)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("statement counts of one write (-want +got):\n%s", diff)
	}
}
