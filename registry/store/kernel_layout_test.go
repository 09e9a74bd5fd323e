package store

import (
	"database/sql"
	"strings"
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
	for _, table := range legacyKernelTables {
		var wr bool
		must(t, db.QueryRow(`SELECT wr FROM pragma_table_list WHERE schema = 'main' AND name = ?`, table).Scan(&wr))
		out[table] = wr
	}
	return out
}

// checkKernelTablesWithoutRowid fails t unless every kernel table of db is
// WITHOUT ROWID and none of the legacy tables set aside is left.
func checkKernelTablesWithoutRowid(t testing.TB, db *sql.DB) {
	t.Helper()
	for table, wr := range kernelTablesWithoutRowid(t, db) {
		if !wr {
			t.Errorf("table %s is a rowid table, want WITHOUT ROWID", table)
		}
	}
	var old int
	must(t, db.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name LIKE 'legacy\_%' ESCAPE '\'`).Scan(&old))
	if old != 0 {
		t.Errorf("%d tables of the legacy layout left", old)
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

// TestMigrateLegacyKernelFailsWhole: a legacy kernel table the migration
// cannot copy as it is — a row the WITHOUT ROWID table cannot hold (a
// thread whose id is NULL, which a rowid table's PRIMARY KEY lets in), a
// column the current layout has no place for, a table in the way of the
// name it is set aside under — fails Open and leaves the database as it
// was, rather than lose rows or values.
func TestMigrateLegacyKernelFailsWhole(t *testing.T) {
	tests := []struct{ name, setup, says string }{
		{"a thread without an id", `INSERT INTO threads (id, path) VALUES (NULL, '[]')`, "threads table (copy the rows"},
		{"a column without a place", `ALTER TABLE watchers ADD COLUMN extra TEXT`, "columns [extra] have no place"},
		{"a table in the way", `CREATE TABLE legacy_slots (x)`, "slots table (set it aside"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := legacyDir(t)
			db := rawDB(t, dir)
			_, err := db.Exec(tt.setup)
			must(t, err)
			before := dumpQuery(t, db, `SELECT type, name, sql FROM sqlite_schema ORDER BY name`)
			threads := dumpQuery(t, db, `SELECT * FROM threads ORDER BY id`)
			s, err := Open(dir, Options{Logger: quietLogger()})
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded over a legacy kernel table it cannot copy")
			}
			if !strings.Contains(err.Error(), tt.says) {
				t.Errorf("Open = %v, want an error saying %q", err, tt.says)
			}
			if d := cmp.Diff(before, dumpQuery(t, db, `SELECT type, name, sql FROM sqlite_schema ORDER BY name`)); d != "" {
				t.Errorf("the failed migration changed the database (-before +after):\n%s", d)
			}
			if d := cmp.Diff(threads, dumpQuery(t, db, `SELECT * FROM threads ORDER BY id`)); d != "" {
				t.Errorf("the failed migration changed the threads (-before +after):\n%s", d)
			}
		})
	}
}
