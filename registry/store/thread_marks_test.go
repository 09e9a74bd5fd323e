package store

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestThreadMarksKeptAcrossReopen: a thread's lifetime marks (spent,
// awaiting) are kept with its row, so a restart ends the spent threads of
// a conversation in flight with it rather than at the TTL; a database
// written before the column existed gets it at its next Open, its rows
// unmarked, and keeps what is written after.
func TestThreadMarksKeptAcrossReopen(t *testing.T) {
	s, dir := openTest(t, Options{})
	must(t, s.Close())
	// The table as an earlier version left it: no marks column, one row.
	db := rawDB(t, dir)
	for _, q := range []string{
		`ALTER TABLE threads DROP COLUMN marks`,
		`INSERT INTO threads (id, parent, path, created_ns, touched_ns, ref, profile, hops)
			VALUES ('old', '', '["b","a","ping"]', 1, 1, '', '', 0)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	must(t, db.Close())

	at := time.Unix(0, 2).UTC()
	s = openAt(t, dir, Options{})
	for _, r := range []ThreadRow{
		{ID: "spent", Parent: "old", Spent: true},
		{ID: "waits", Parent: "old", Awaiting: true},
		{ID: "plain", Parent: "old"},
	} {
		r.Path, r.Created, r.Touched = []string{"b", "a", "ping", "c"}, at, at
		must(t, s.PutThread(r))
	}
	must(t, s.Flush(context.Background()))
	must(t, s.Close())

	s = openAt(t, dir, Options{})
	rows, err := s.LoadThreads()
	must(t, err)
	type marks struct{ Spent, Awaiting bool }
	got := map[string]marks{}
	for _, r := range rows {
		got[r.ID] = marks{r.Spent, r.Awaiting}
	}
	want := map[string]marks{"old": {}, "spent": {Spent: true}, "waits": {Awaiting: true}, "plain": {}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("marks by thread after reopening (-want +got):\n%s", d)
	}
}
