package store

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// checkKernelState fails t unless s's committed kernel state is want (an
// empty slice and a nil one are alike).
func checkKernelState(t *testing.T, s *Store, want kernelState) {
	t.Helper()
	if d := cmp.Diff(want, loadKernel(t, s), cmpopts.EquateEmpty()); d != "" {
		t.Errorf("kernel state differs (-want +got):\n%s", d)
	}
}

// kernelTablesWithoutRowid returns, per kernel table of db, whether it is a
// WITHOUT ROWID table.
func kernelTablesWithoutRowid(t testing.TB, db *sql.DB) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, r := range kernelRebuilds {
		var wr bool
		must(t, db.QueryRow(`SELECT wr FROM pragma_table_list WHERE schema = 'main' AND name = ?`, r.table).Scan(&wr))
		out[r.table] = wr
	}
	return out
}

// checkKernelTablesWithoutRowid fails t unless every kernel table of db is
// WITHOUT ROWID and none of the migration's old tables is left.
func checkKernelTablesWithoutRowid(t testing.TB, db *sql.DB) {
	t.Helper()
	for table, wr := range kernelTablesWithoutRowid(t, db) {
		if !wr {
			t.Errorf("table %s is a rowid table, want WITHOUT ROWID", table)
		}
	}
	var old int
	must(t, db.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name LIKE '%\_v5' ESCAPE '\'`).Scan(&old))
	if old != 0 {
		t.Errorf("%d objects of the old layout left", old)
	}
}

// TestKernelTablesWithoutRowid: a fresh store's threads, watchers and slots
// are WITHOUT ROWID tables, one b-tree each (no index of their keys), and
// what is written to them reads back across a reopen.
func TestKernelTablesWithoutRowid(t *testing.T) {
	s, dir := openTest(t, Options{})
	checkKernelTablesWithoutRowid(t, rawDB(t, dir))
	var indexes int
	must(t, rawDB(t, dir).QueryRow(`SELECT count(*) FROM sqlite_schema WHERE type = 'index'
		AND tbl_name IN ('threads', 'watchers', 'slots')`).Scan(&indexes))
	if indexes != 0 {
		t.Errorf("%d indexes on the kernel tables, want none", indexes)
	}
	f := kernelFixture{at: time.Unix(100, 0).UTC()}
	want := kernelState{
		Threads:  []ThreadRow{f.thread("t1", "org", "a.b"), f.thread("t2", "org")},
		Watchers: []WatcherRow{f.watcher("w1", "t1", true)},
		Slots:    []SlotRow{f.slot("t1", 0, "<a/>"), f.slot("t1", 1, ""), f.slot("t2", 0, string(make([]byte, 40000)))},
	}
	for _, r := range want.Threads {
		must(t, s.CreateThread(r))
	}
	must(t, s.PutWatcher(f.watcher("w1", "t1", false)))
	must(t, s.PutWatcher(want.Watchers[0]))
	for _, r := range want.Slots {
		must(t, s.AppendSlot(r))
	}
	must(t, s.Close())
	s = openAt(t, dir, Options{})
	checkKernelState(t, s, want)
}

// TestMigrateKernelFailsWhole: a layout 6 migration that fails part way
// (here a table in the way of the old slots table's temporary name, after
// threads and watchers were rebuilt) fails Open and leaves the database as
// it was: of layout 5, its kernel tables rowid tables holding every row,
// and the journal view unchanged. Once the obstacle is gone, Open migrates.
func TestMigrateKernelFailsWhole(t *testing.T) {
	dir, m := layoutDir(t, 5)
	db := rawDB(t, dir)
	_, err := db.Exec(`CREATE TABLE slots_v5 (x)`)
	must(t, err)
	s, err := Open(dir, Options{Logger: quietLogger()})
	if err == nil {
		s.Close()
		t.Fatal("Open succeeded over a failing migration")
	}
	if v := userVersion(t, dir); v != 5 {
		t.Errorf("user_version = %d after a failed migration, want 5", v)
	}
	for table, wr := range kernelTablesWithoutRowid(t, db) {
		if wr {
			t.Errorf("table %s is WITHOUT ROWID after a failed migration", table)
		}
	}
	if d := cmp.Diff(m.View, dumpJournalView(t, db)); d != "" {
		t.Errorf("journal view after a failed migration differs (-before +after):\n%s", d)
	}
	for table, want := range map[string]int{"threads": len(m.Threads), "watchers": len(m.Watchers), "slots": len(m.Slots)} {
		var n int
		must(t, db.QueryRow(`SELECT count(*) FROM `+table).Scan(&n))
		if n != want || n == 0 {
			t.Errorf("%s holds %d rows after a failed migration, want %d", table, n, want)
		}
	}

	_, err = db.Exec(`DROP TABLE slots_v5`)
	must(t, err)
	s = openAt(t, dir, Options{})
	checkKernelState(t, s, kernelState{Threads: m.Threads, Watchers: m.Watchers, Slots: m.Slots})
	checkKernelTablesWithoutRowid(t, db)
}

// TestMigrateKernelCopyChecked: a row the WITHOUT ROWID table cannot hold
// as it was (a thread whose id is NULL, which a rowid table's PRIMARY KEY
// lets in and this store never writes) fails the migration rather than
// losing the row.
func TestMigrateKernelCopyChecked(t *testing.T) {
	dir, _ := layoutDir(t, 5)
	_, err := rawDB(t, dir).Exec(`INSERT INTO threads (id, path) VALUES (NULL, '[]')`)
	must(t, err)
	s, err := Open(dir, Options{Logger: quietLogger()})
	if err == nil {
		s.Close()
		t.Fatal("Open succeeded over a row the migration cannot copy")
	}
	if v := userVersion(t, dir); v != 5 {
		t.Errorf("user_version = %d after a failed migration, want 5", v)
	}
}

// TestMigrateKernelRestart: a layout 5 data directory's kernel state,
// migrated, goes on as before: rows put, raised and deleted after the
// migration read back across a reopen with the migrated ones.
func TestMigrateKernelRestart(t *testing.T) {
	ctx := context.Background()
	dir, m := layoutDir(t, 5)
	s := openAt(t, dir, Options{})
	f := kernelFixture{at: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)} // after every fixture row
	want := kernelState{Threads: m.Threads[1:], Watchers: m.Watchers, Slots: m.Slots}
	ended := m.Threads[0].ID
	must(t, s.DeleteThreads([]string{ended}))
	newThread := f.thread("ffffffff-0000-4000-8000-000000000001", "org", "b")
	must(t, s.CreateThread(newThread))
	want.Threads = append(want.Threads, newThread)
	w := m.Watchers[1]
	w.Raised, w.TriggeredFrom = true, "worker"
	must(t, s.PutWatcher(w))
	want.Watchers[1] = w
	var slots []SlotRow
	for _, r := range m.Slots {
		if r.Thread != m.Slots[0].Thread {
			slots = append(slots, r)
		}
	}
	must(t, s.DeleteSlots(m.Slots[0].Thread))
	extra := f.slot(newThread.ID, 0, "<new/>")
	must(t, s.AppendSlot(extra))
	want.Slots = append(slots, extra)
	must(t, s.Flush(ctx))
	must(t, s.Close())
	s = openAt(t, dir, Options{})
	checkKernelState(t, s, want)
}

// TestKernelLayoutFixtureUntouched guards the fixture: it is the store of
// layout 5's own writing (rowid kernel tables), which the tests above
// migrate.
func TestKernelLayoutFixtureUntouched(t *testing.T) {
	dir, _ := layoutDir(t, 5)
	if v := userVersion(t, dir); v != 5 {
		t.Fatalf("fixture user_version = %d, want 5", v)
	}
	for table, wr := range kernelTablesWithoutRowid(t, rawDB(t, dir)) {
		if wr {
			t.Errorf("fixture table %s is WITHOUT ROWID, want the rowid table layout 5 wrote", table)
		}
	}
}
