package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// dumpQuery returns every row query returns, each column as its text (NULL
// as nil).
func dumpQuery(t testing.TB, db *sql.DB, query string) []map[string]*string {
	t.Helper()
	rows, err := db.Query(query)
	must(t, err)
	defer rows.Close()
	cols, err := rows.Columns()
	must(t, err)
	var out []map[string]*string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		must(t, rows.Scan(ptrs...))
		row := map[string]*string{}
		for i, c := range cols {
			if vals[i].Valid {
				v := vals[i].String
				row[c] = &v
			}
		}
		out = append(out, row)
	}
	must(t, rows.Err())
	return out
}

// TestJournalNames: the writer enters each name once (the empty name is
// id 0), keeps the ids across a reopen, enters again the names of a
// transaction that was rolled back, and entries read their names back.
func TestJournalNames(t *testing.T) {
	ctx := context.Background()
	s, dir := openTest(t, Options{})
	e := testEntry(1, "t1")
	e.Profile = "admin&ops"
	_, err := s.AppendSync(ctx, e)
	must(t, err)
	e.To, e.Profile = "", ""
	_, err = s.AppendSync(ctx, e)
	must(t, err)
	must(t, s.Close())
	names := func() map[string]int64 {
		out := map[string]int64{}
		rows, err := rawDB(t, dir).Query(`SELECT id, name FROM journal_names`)
		must(t, err)
		defer rows.Close()
		for rows.Next() {
			var id int64
			var n string
			must(t, rows.Scan(&id, &n))
			out[n] = id
		}
		must(t, rows.Err())
		return out
	}
	got := names()
	if got[""] != 0 || len(got) != 5 {
		t.Errorf("names %v, want the empty name as 0, greeter, shouter, Greeting and admin&ops", got)
	}

	// A batch that fails (a mark of a seq never journaled) is rolled back
	// and retried op by op: the new name of its append is entered by the
	// retry.
	s = openAt(t, dir, Options{BatchDelay: time.Hour, BatchRows: 1000})
	e.From, e.Profile = "newcomer", "admin&ops"
	seq, err := s.AppendSeq(e)
	must(t, err)
	must(t, s.MarkDelivered(seq+100))
	if err := s.Flush(ctx); !errors.Is(err, ErrNotFound) {
		t.Errorf("Flush = %v, want the mark's ErrNotFound", err)
	}
	entries, err := s.After(0, 0)
	must(t, err)
	rep, err := s.Verify(ctx, nil)
	must(t, err)
	if !rep.OK() {
		t.Errorf("Verify: %+v", rep.Faults)
	}
	must(t, s.Close())
	after := names()
	for n, id := range got {
		if after[n] != id {
			t.Errorf("name %q is %d after a reopen, was %d", n, after[n], id)
		}
	}
	if len(after) != len(got)+1 || after["newcomer"] == 0 {
		t.Errorf("names %v, want newcomer entered once", after)
	}
	want := [][3]string{{"greeter", "shouter", "admin&ops"}, {"greeter", "", ""}, {"newcomer", "", "admin&ops"}}
	if len(entries) != len(want) {
		t.Fatalf("%d entries, want %d", len(entries), len(want))
	}
	for i, e := range entries {
		if got := [3]string{e.From, e.To, e.Profile}; got != want[i] || e.ProfileUnknown || e.Listener != "shouter" ||
			e.PayloadTag != "Greeting" {
			t.Errorf("entry %d: %+v, want from, to, profile %q", e.Seq, e, want[i])
		}
	}
}

// TestJournalNamesBeyondTheCache: past maxCachedNames the writer looks a
// name up in journal_names instead of its map, and a name is still entered
// once, whether it is new, entered earlier in the same transaction or
// committed before; every entry reads its names back, across a reopen.
func TestJournalNamesBeyondTheCache(t *testing.T) {
	defer func(n int) { maxCachedNames = n }(maxCachedNames)
	maxCachedNames = 3
	ctx := context.Background()
	s, dir := openTest(t, Options{BatchDelay: time.Hour, BatchRows: 1000})
	var want []string
	for round := range 3 {
		if round == 2 {
			must(t, s.Close())
			s = openAt(t, dir, Options{BatchDelay: time.Hour, BatchRows: 1000})
		}
		for i := range 12 {
			e := testEntry(i, "t")
			e.From, e.PayloadTag = fmt.Sprintf("sender-%d", (i+round)%9), fmt.Sprintf("Tag%d", (i+round)%5)
			e.To = fmt.Sprintf("late-%d", round) // new in each round, twelve times
			must(t, s.Append(e))
			want = append(want, e.From+" "+e.To+" "+e.PayloadTag)
		}
		must(t, s.Flush(ctx))
	}
	entries, err := s.After(0, 0)
	must(t, err)
	var got []string
	for _, e := range entries {
		got = append(got, e.From+" "+e.To+" "+e.PayloadTag)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("names read back (-appended +read):\n%s", d)
	}
	rep, err := s.Verify(ctx, nil)
	must(t, err)
	if !rep.OK() {
		t.Errorf("Verify: %+v", rep.Faults)
	}
	must(t, s.Close())
	var names, distinct int
	must(t, rawDB(t, dir).QueryRow(`SELECT count(*), count(DISTINCT name) FROM journal_names`).Scan(&names, &distinct))
	// "", shouter, late-0…2, 9 senders, 5 tags.
	if names != 19 || distinct != names {
		t.Errorf("journal_names holds %d names (%d distinct), want 19", names, distinct)
	}
}
