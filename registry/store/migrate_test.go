package store

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// rawDB opens the store database in dir directly, bypassing Store (the
// store must be closed or tolerate a second connection).
func rawDB(t testing.TB, dir string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(dir, DatabaseFileName)+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// appliedVersions lists schema_version rows.
func appliedVersions(t testing.TB, db *sql.DB) []int {
	t.Helper()
	rows, err := db.Query(`SELECT version FROM schema_version ORDER BY version`)
	must(t, err)
	defer rows.Close()
	var out []int
	for rows.Next() {
		var v int
		must(t, rows.Scan(&v))
		out = append(out, v)
	}
	must(t, rows.Err())
	return out
}

func TestMigrationsIdempotent(t *testing.T) {
	s, dir := openTest(t, Options{})
	must(t, s.Close())
	for range 2 {
		s = openAt(t, dir, Options{})
		must(t, s.Close())
	}
	want := []int{}
	for _, m := range migrations {
		want = append(want, m.version)
	}
	if d := cmp.Diff(want, appliedVersions(t, rawDB(t, dir))); d != "" {
		t.Errorf("applied versions (-want +got):\n%s", d)
	}
}

func TestMigrateIncremental(t *testing.T) {
	db := rawDB(t, t.TempDir())
	ctx := context.Background()
	clock := func() int64 { return 1 }
	steps := []migration{
		{version: 1, name: "a", sql: `CREATE TABLE a (x); INSERT INTO a VALUES (1);`},
		{version: 2, name: "b", sql: `CREATE TABLE b (y)`},
		{version: 3, name: "c", sql: `INSERT INTO a VALUES (3)`},
	}
	tests := []struct {
		name    string
		migs    []migration
		want    int
		wantErr error
	}{
		{"first", steps[:1], 1, nil},
		{"again", steps[:1], 1, nil},
		{"two more", steps, 3, nil},
		{"again", steps, 3, nil},
		{"older binary", steps[:2], 3, ErrSchemaTooNew},
	}
	for _, tt := range tests {
		got, err := migrate(ctx, db, tt.migs, clock)
		if !errors.Is(err, tt.wantErr) || got != tt.want {
			t.Fatalf("%s: migrate = %d, %v; want %d, %v", tt.name, got, err, tt.want, tt.wantErr)
		}
	}
	var n int
	must(t, db.QueryRow(`SELECT count(*) FROM a`).Scan(&n))
	if n != 2 {
		t.Errorf("rows in a = %d, want 2 (each step ran once)", n)
	}
	if _, err := migrate(ctx, db, []migration{{version: 2, name: "gap"}}, clock); err == nil {
		t.Error("out-of-order migration list accepted")
	}
}

func TestMigrationFailureRollsBack(t *testing.T) {
	db := rawDB(t, t.TempDir())
	bad := []migration{
		{version: 1, name: "ok", sql: `CREATE TABLE a (x)`},
		{version: 2, name: "bad", sql: `CREATE TABLE b (y); THIS IS NOT SQL`},
	}
	if _, err := migrate(context.Background(), db, bad, func() int64 { return 1 }); err == nil {
		t.Fatal("bad migration succeeded")
	}
	if d := cmp.Diff([]int{1}, appliedVersions(t, db)); d != "" {
		t.Errorf("applied (-want +got):\n%s", d)
	}
	var n int
	must(t, db.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name = 'b'`).Scan(&n))
	if n != 0 {
		t.Error("table b of the failed migration exists")
	}
}

func TestOpenNewerSchemaFails(t *testing.T) {
	s, dir := openTest(t, Options{})
	must(t, s.Close())
	db := rawDB(t, dir)
	if _, err := db.Exec(`INSERT INTO schema_version (version, name, applied_at) VALUES (99, 'future', 0)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err := Open(dir, Options{Logger: quietLogger()})
	if !errors.Is(err, ErrSchemaTooNew) || !strings.Contains(err.Error(), "version 99") {
		t.Fatalf("Open of a newer database = %v, want ErrSchemaTooNew naming version 99", err)
	}
	// The failed Open released the lock.
	l, err := lockDir(dir)
	if err != nil {
		t.Fatalf("lock still held after failed Open: %v", err)
	}
	must(t, l.unlock())
}

// TestSchemaGolden pins the schema the migrations produce; a change to a
// released migration shows up here. Run with -update to accept a new
// migration.
func TestSchemaGolden(t *testing.T) {
	s, dir := openTest(t, Options{})
	must(t, s.Close())
	rows, err := rawDB(t, dir).Query(`SELECT type, name, sql FROM sqlite_schema
		WHERE sql IS NOT NULL ORDER BY type, name`)
	must(t, err)
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var typ, name, text string
		must(t, rows.Scan(&typ, &name, &text))
		b.WriteString("-- " + typ + " " + name + "\n" + text + ";\n\n")
	}
	must(t, rows.Err())
	golden := filepath.Join("testdata", "schema.golden.sql")
	if *update {
		must(t, os.WriteFile(golden, []byte(b.String()), 0o644))
	}
	want, err := os.ReadFile(golden)
	must(t, err)
	if d := cmp.Diff(string(want), b.String()); d != "" {
		t.Errorf("schema differs from %s (-want +got); run with -update if intended:\n%s", golden, d)
	}
}
