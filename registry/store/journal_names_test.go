package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// layout3Manifest is what testdata/layout-vN.json.gz records of the layout
// N fixture (testdata/layoutgen/gen.go): the kernel state from layout 5 on.
type layout3Manifest struct {
	View          []map[string]*string `json:"view"`
	Undelivered   []int64              `json:"undelivered"`
	Thread5       []int64              `json:"thread5"`
	PrunedThread5 []int64              `json:"pruned_thread5"`
	Threads       []ThreadRow          `json:"threads"`
	Watchers      []WatcherRow         `json:"watchers"`
	Slots         []SlotRow            `json:"slots"`
}

// layoutDir returns a data directory holding the fixture of layout version
// (testdata/layout-vN.db.gz, written by testdata/layoutN/gen.go) and what
// it holds.
func layoutDir(t testing.TB, version int) (string, layout3Manifest) {
	t.Helper()
	var m layout3Manifest
	must(t, json.Unmarshal(gunzip(t, fmt.Sprintf("layout-v%d.json.gz", version)), &m))
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, DatabaseFileName), gunzip(t, fmt.Sprintf("layout-v%d.db.gz", version)), 0o600))
	return dir, m
}

// dumpJournalView returns every row of the journal view, each column as its
// text (NULL as nil), in seq order, as testdata/layoutgen/gen.go wrote it.
func dumpJournalView(t testing.TB, db *sql.DB) []map[string]*string {
	t.Helper()
	rows, err := db.Query(`SELECT * FROM journal ORDER BY seq`)
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

// TestMigrateLayout3 opens a data directory the store of layout 3 wrote
// (the journal's names as text; testdata/layoutgen/gen.go: 2100 entries of
// several senders, listeners, root tags and profiles, dead letters, delivery
// marks and pruned entries) and checks the one-time migration to layout 4
// and on to 5 (migrateFixture).
func TestMigrateLayout3(t *testing.T) { migrateFixture(t, 3) }

// TestMigrateLayout4 is TestMigrateLayout3 for the fixture the store of
// layout 4 wrote (the journal's names as journal_names ids in each row;
// testdata/layoutgen/gen.go, the same entries): the one-time migration to
// layout 5, each row's direction, kind and names as a journal_routes id.
func TestMigrateLayout4(t *testing.T) { migrateFixture(t, 4) }

// TestMigrateLayout5 is TestMigrateLayout3 for the fixture the store of
// layout 5 wrote (the same entries, and threads, watchers and slots in
// rowid tables; testdata/layoutgen/gen.go): the one-time migration to
// layout 6, the kernel tables WITHOUT ROWID, every row kept.
func TestMigrateLayout5(t *testing.T) { migrateFixture(t, 5) }

// migrateFixture opens the data directory of the fixture of layout version
// and checks its migration to the current layout: the journal view reads
// exactly as before, column by column; the readers return the same entries
// (After against the view, Thread, PrunedOf, Undelivered as recorded); the
// routes hold the names as ids; the result has the layout of a fresh store
// and verifies; and the journal goes on.
func migrateFixture(t *testing.T, version int) {
	ctx := context.Background()
	dir, m := layoutDir(t, version)
	if _, err := OpenReadOnly(dir); !errors.Is(err, ErrSchemaOutdated) {
		t.Fatalf("OpenReadOnly before the migration = %v, want ErrSchemaOutdated", err)
	}
	s := openAt(t, dir, Options{})
	if v := userVersion(t, dir); v != layoutVersion {
		t.Fatalf("user_version = %d, want %d", v, layoutVersion)
	}
	if d := cmp.Diff(m.View, dumpJournalView(t, rawDB(t, dir))); d != "" {
		t.Fatalf("journal view after the migration differs (-before +after):\n%s", d)
	}
	if version >= 5 && (len(m.Threads) == 0 || len(m.Watchers) == 0 || len(m.Slots) == 0) {
		t.Fatalf("the layout %d fixture holds %d threads, %d watchers, %d slots; want some of each",
			version, len(m.Threads), len(m.Watchers), len(m.Slots))
	}
	checkKernelState(t, s, kernelState{Threads: m.Threads, Watchers: m.Watchers, Slots: m.Slots})
	checkKernelTablesWithoutRowid(t, rawDB(t, dir))
	var textNames int
	must(t, rawDB(t, dir).QueryRow(`SELECT count(*) FROM journal_routes WHERE typeof(sender) <> 'integer'
		OR typeof(recipient) <> 'integer' OR typeof(listener) <> 'integer' OR typeof(root) <> 'integer'
		OR typeof(profile) <> 'integer'`).Scan(&textNames))
	if textNames != 0 {
		t.Errorf("%d rows hold a name that is not an id", textNames)
	}

	entries, err := s.After(0, 0)
	must(t, err)
	var live []map[string]*string
	for _, v := range m.View {
		if v["pruned"] == nil {
			live = append(live, v)
		}
	}
	if len(entries) != len(live) || len(live) == len(m.View) {
		t.Fatalf("%d entries after the migration, want %d of %d", len(entries), len(live), len(m.View))
	}
	for i, e := range entries {
		v := live[i]
		got := []string{fmt.Sprint(e.Seq), fmt.Sprint(e.Time.UnixNano()), e.Thread, e.Conversation, e.Direction.String(),
			e.Kind.String(), e.From, e.To, e.Listener, e.PayloadTag, string(e.Bytes), e.Diagnostics, e.Profile,
			fmt.Sprint(e.ProfileUnknown), fmt.Sprint(e.SHA256 == sha256.Sum256(e.Bytes))}
		want := []string{*v["seq"], *v["time_ns"], *v["thread"], *v["conversation"], *v["direction"], *v["kind"],
			*v["sender"], *v["recipient"], *v["listener"], *v["root"], *v["envelope"], *v["diagnostics"], *v["profile"],
			"false", "true"}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("entry %d differs from the view (-view +entry):\n%s", e.Seq, d)
		}
	}
	seqsOf := func(es []Entry) []int64 {
		var out []int64
		for _, e := range es {
			out = append(out, e.Seq)
		}
		return out
	}
	thread, err := s.Thread("thread-5")
	must(t, err)
	undelivered, err := s.Undelivered()
	must(t, err)
	pruned, err := s.PrunedOf("thread-5")
	must(t, err)
	var prunedSeqs []int64
	for _, p := range pruned {
		prunedSeqs = append(prunedSeqs, p.Seq)
		if p.From == "" || p.Listener != "sink" || p.Profile != "admin" || p.NoMetadata {
			t.Errorf("pruned %d: %+v, want its metadata", p.Seq, p)
		}
	}
	for _, c := range []struct {
		name      string
		got, want []int64
	}{{"Thread", seqsOf(thread), m.Thread5}, {"Undelivered", seqsOf(undelivered), m.Undelivered},
		{"PrunedOf", prunedSeqs, m.PrunedThread5}} {
		if !slices.Equal(c.got, c.want) || len(c.want) == 0 {
			t.Errorf("%s after the migration = %v, want %v", c.name, c.got, c.want)
		}
	}
	rep, err := s.Verify(ctx, nil)
	must(t, err)
	if !rep.OK() {
		t.Errorf("Verify after the migration: %+v", rep.Faults)
	}

	// The journal goes on: an entry of a known and one of a new name.
	high, err := s.LastSeq()
	must(t, err)
	e := testEntry(1, "thread-5")
	e.Listener, e.Profile, e.From = "sink", "admin", "newcomer"
	seq, err := s.AppendSync(ctx, e)
	must(t, err)
	if seq != high+1 {
		t.Errorf("new seq %d, want %d", seq, high+1)
	}
	thread, err = s.Thread("thread-5")
	must(t, err)
	if last := thread[len(thread)-1]; last.Seq != seq || last.From != "newcomer" || last.Listener != "sink" ||
		last.Profile != "admin" {
		t.Errorf("new entry reads %+v", last)
	}
	must(t, s.Close())

	fresh, freshDir := openTest(t, Options{})
	must(t, fresh.Close())
	if d := cmp.Diff(columns(t, rawDB(t, freshDir)), columns(t, rawDB(t, dir))); d != "" {
		t.Errorf("migrated layout differs from a fresh one (-fresh +migrated):\n%s", d)
	}
}

// TestMigrateLayoutFailsWhole: a migration that fails part way (here a
// table in the way of the old journal's temporary name) fails Open and
// leaves the database as it was: of its layout, every row and the journal
// view unchanged.
func TestMigrateLayoutFailsWhole(t *testing.T) {
	for _, version := range []int{3, 4} {
		t.Run(fmt.Sprintf("layout %d", version), func(t *testing.T) { migrateFails(t, version) })
	}
}

// migrateFails checks TestMigrateLayoutFailsWhole for the fixture of
// layout version.
func migrateFails(t *testing.T, version int) {
	dir, m := layoutDir(t, version)
	_, err := rawDB(t, dir).Exec(fmt.Sprintf(`CREATE TABLE journal_rows_v%d (x)`, version))
	must(t, err)
	s, err := Open(dir, Options{Logger: quietLogger()})
	if err == nil {
		s.Close()
		t.Fatal("Open succeeded over a failing migration")
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, DatabaseFileName))
	must(t, err)
	defer db.Close()
	var v int
	must(t, db.QueryRow(`PRAGMA user_version`).Scan(&v))
	if v != version {
		t.Errorf("user_version = %d after a failed migration, want %d", v, version)
	}
	if d := cmp.Diff(m.View, dumpJournalView(t, db)); d != "" {
		t.Errorf("journal view after a failed migration differs (-before +after):\n%s", d)
	}
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
