package store

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestThreadHopsKeptAcrossReopen: the hops a thread's conversation made
// before it entered the organism (a peer organism's call) are kept with
// its row, so a restart holds the conversation to max_chain_depth counted
// across organisms; a database written before the column existed (its
// threads table without hops) gets it at its next Open, its rows at 0,
// and keeps what is written after.
func TestThreadHopsKeptAcrossReopen(t *testing.T) {
	s, dir := openTest(t, Options{})
	must(t, s.Close())
	// The table as an earlier version left it: no hops column, one row.
	db := rawDB(t, dir)
	for _, q := range []string{
		`ALTER TABLE threads DROP COLUMN hops`,
		`INSERT INTO threads (id, parent, path, created_ns, touched_ns, ref, profile)
			VALUES ('old', '', '["b","a","ping"]', 1, 1, '', '')`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	must(t, db.Close())

	at := time.Unix(0, 2).UTC()
	s = openAt(t, dir, Options{})
	must(t, s.PutThread(ThreadRow{ID: "new", Path: []string{"b", "a", "ping"}, Created: at, Touched: at, Hops: 9}))
	must(t, s.Flush(context.Background()))
	must(t, s.Close())

	s = openAt(t, dir, Options{})
	rows, err := s.LoadThreads()
	must(t, err)
	got := map[string]int{}
	for _, r := range rows {
		got[r.ID] = r.Hops
	}
	if d := cmp.Diff(map[string]int{"old": 0, "new": 9}, got); d != "" {
		t.Errorf("hops by thread after reopening (-want +got):\n%s", d)
	}
}
