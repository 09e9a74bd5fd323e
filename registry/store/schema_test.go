package store

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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

// userVersion reads the layout version of the database in dir.
func userVersion(t testing.TB, dir string) int {
	t.Helper()
	var v int
	must(t, rawDB(t, dir).QueryRow(`PRAGMA user_version`).Scan(&v))
	return v
}

// TestSchemaGolden pins the layout a fresh store gets. Run with -update to
// accept a change (a changed table needs a new layoutVersion, schema.go).
func TestSchemaGolden(t *testing.T) {
	s, dir := openTest(t, Options{})
	must(t, s.Close())
	got := schemaText(t, rawDB(t, dir))
	golden := filepath.Join("testdata", "schema.golden.sql")
	if *update {
		must(t, os.WriteFile(golden, []byte(got), 0o644))
	}
	want, err := os.ReadFile(golden)
	must(t, err)
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("schema differs from %s (-want +got); run with -update if intended:\n%s", golden, d)
	}
	if v := userVersion(t, dir); v != layoutVersion {
		t.Errorf("user_version = %d, want %d", v, layoutVersion)
	}
}

// schemaText is the SQL of every table, index, view and trigger of db.
func schemaText(t testing.TB, db *sql.DB) string {
	t.Helper()
	rows, err := db.Query(`SELECT type, name, sql FROM sqlite_schema WHERE sql IS NOT NULL ORDER BY type, name`)
	must(t, err)
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var typ, name, text string
		must(t, rows.Scan(&typ, &name, &text))
		b.WriteString("-- " + typ + " " + name + "\n" + text + ";\n\n")
	}
	must(t, rows.Err())
	return b.String()
}

// columns describes every table and index of db by its columns (names,
// types, constraints as PRAGMA table_xinfo and index_xinfo report them),
// which is what two databases with the same layout share even when their
// CREATE statements were written differently.
func columns(t testing.TB, db *sql.DB) map[string][]string {
	t.Helper()
	rows, err := db.Query(`SELECT type, name FROM sqlite_schema WHERE type IN ('table', 'index', 'trigger')
		AND name NOT LIKE 'sqlite_%' ORDER BY name`)
	must(t, err)
	var objs [][2]string
	for rows.Next() {
		var o [2]string
		must(t, rows.Scan(&o[0], &o[1]))
		objs = append(objs, o)
	}
	must(t, rows.Err())
	rows.Close()
	out := map[string][]string{}
	for _, o := range objs {
		var q string
		switch o[0] {
		case "table":
			q = `SELECT name || ' ' || type || ' ' || "notnull" || ' ' || coalesce(dflt_value, '') || ' ' || pk || ' ' || hidden
				FROM pragma_table_xinfo(?)`
		case "index":
			q = `SELECT coalesce(name, '') || ' ' || "desc" || ' ' || key FROM pragma_index_xinfo(?)`
		default:
			out[o[1]] = []string{o[0]}
			continue
		}
		cols, err := db.Query(q, o[1])
		must(t, err)
		for cols.Next() {
			var c string
			must(t, cols.Scan(&c))
			out[o[1]] = append(out[o[1]], c)
		}
		must(t, cols.Err())
		cols.Close()
	}
	return out
}

// TestSchemaAppliedAtEveryOpen: a table appended to schema (the way to add
// one) appears in an existing database at its next Open, without a layout
// change; everything else is left as it was.
func TestSchemaAppliedAtEveryOpen(t *testing.T) {
	s, dir := openTest(t, Options{})
	_, err := s.AppendSync(context.Background(), testEntry(1, "t"))
	must(t, err)
	must(t, s.Close())
	saved := schema
	t.Cleanup(func() { schema = saved })
	schema = append(slices.Clone(schema), `CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, note TEXT NOT NULL)`)
	s = openAt(t, dir, Options{})
	if _, err := s.do(context.Background(), "note", func(w *writer) (int64, error) {
		return w.exec(`INSERT INTO notes (note) VALUES ('kept')`)
	}); err != nil {
		t.Fatalf("the added table: %v", err)
	}
	if n, err := s.Count(); err != nil || n != 1 {
		t.Fatalf("Count = %d, %v; want the journal kept", n, err)
	}
	must(t, s.Close())
	if v := userVersion(t, dir); v != layoutVersion {
		t.Errorf("user_version = %d, want %d", v, layoutVersion)
	}
}

// TestOpenNewerLayoutFails: a database of a newer layout is refused by Open
// and by OpenReadOnly, and the failed Open releases the directory lock.
func TestOpenNewerLayoutFails(t *testing.T) {
	s, dir := openTest(t, Options{})
	must(t, s.Close())
	if _, err := rawDB(t, dir).Exec(`PRAGMA user_version = 99`); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir, Options{Logger: quietLogger()})
	if !errors.Is(err, ErrSchemaTooNew) || !strings.Contains(err.Error(), "layout 99") {
		t.Fatalf("Open of a newer database = %v, want ErrSchemaTooNew naming layout 99", err)
	}
	if _, err := OpenReadOnly(dir); !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("OpenReadOnly of a newer database = %v, want ErrSchemaTooNew", err)
	}
	l, err := lockDir(dir)
	if err != nil {
		t.Fatalf("lock still held after failed Open: %v", err)
	}
	must(t, l.unlock())
}

// TestOpenUnreleasedLayoutFails: a database of a layout only development
// builds wrote (layouts 1 to 5, a legacy schema older than segments) is
// refused by Open and by OpenReadOnly with ErrUnreleasedLayout, the error
// naming the data directory, the layout, its day and what to do; the
// database is left as it was and the failed Open releases the directory
// lock.
func TestOpenUnreleasedLayoutFails(t *testing.T) {
	tests := []struct {
		name  string
		setup string   // SQL run on a fresh store's database
		says  []string // in the error
	}{
		{"layout 1", `PRAGMA user_version = 1`, []string{"layout 1, 2026-11-26"}},
		{"layout 2", `ALTER TABLE users DROP COLUMN profile; PRAGMA user_version = 2`, []string{"layout 2, 2026-11-27"}},
		{"layout 3", `PRAGMA user_version = 3`, []string{"layout 3, 2026-11-27"}},
		{"layout 4", `PRAGMA user_version = 4`, []string{"layout 4, 2026-11-27"}},
		{"layout 5", `PRAGMA user_version = 5`, []string{"layout 5, 2026-11-27"}},
		{"legacy schema 2", `CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL,
			applied_at INTEGER NOT NULL); INSERT INTO schema_version VALUES (1, 'journal', 0), (2, 'kernel', 0);
			PRAGMA user_version = 0`, []string{"legacy schema 2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, dir := openTest(t, Options{})
			must(t, s.Close())
			db := rawDB(t, dir)
			if _, err := db.Exec(tt.setup); err != nil {
				t.Fatal(err)
			}
			var version int
			must(t, db.QueryRow(`PRAGMA user_version`).Scan(&version))
			before := schemaText(t, db)
			must(t, db.Close())

			says := slices.Concat(tt.says, []string{"data directory " + dir, "development build", "`xmlpipe journal export`",
				"fresh one"})
			_, err := Open(dir, Options{Logger: quietLogger()})
			if !errors.Is(err, ErrUnreleasedLayout) {
				t.Fatalf("Open = %v, want ErrUnreleasedLayout", err)
			}
			for _, w := range says {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Open's error %q does not say %q", err, w)
				}
			}
			if _, err := OpenReadOnly(dir); !errors.Is(err, ErrUnreleasedLayout) {
				t.Errorf("OpenReadOnly = %v, want ErrUnreleasedLayout", err)
			}
			db = rawDB(t, dir)
			if after := schemaText(t, db); after != before {
				t.Errorf("the refused database changed:\n%s", cmp.Diff(before, after))
			}
			var after int
			must(t, db.QueryRow(`PRAGMA user_version`).Scan(&after))
			if after != version {
				t.Errorf("user_version = %d after the refusal, want %d", after, version)
			}
			l, err := lockDir(dir)
			if err != nil {
				t.Fatalf("lock still held after the refused Open: %v", err)
			}
			must(t, l.unlock())
		})
	}
}

// legacyManifest is testdata/legacy-v11.json.gz: what the legacy fixture
// holds (testdata/legacy/gen.go).
type legacyManifest struct {
	Entries []struct {
		Seq                                   int64
		TimeNS                                int64 `json:"time_ns"`
		Thread, Conversation, Direction, Kind string
		From, To, Listener                    string
		PayloadTag                            string `json:"payload_tag"`
		SHA256                                string
		Diagnostics                           string
	}
	Tombstoned  []int64
	Undelivered []int64
	HighSeq     int64 `json:"high_seq"`
	Threads     []string
	Users       []string
	Calls       int
	Approvals   []string
	Signatures  int
}

// gunzip reads the gzipped testdata file name.
func gunzip(t testing.TB, name string) []byte {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	must(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	must(t, err)
	b, err := io.ReadAll(zr)
	must(t, err)
	return b
}

// legacyDir returns a data directory holding the legacy fixture's
// database.
func legacyDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, DatabaseFileName), gunzip(t, "legacy-v11.db.gz"), 0o600))
	return dir
}

// TestMigrateLegacy opens a data directory written by the store before the
// journal was one row per envelope (testdata/legacy/gen.go) and checks that
// the one-time migration kept everything: every entry with its columns,
// bytes and hash, the tombstones, the delivery marks (the same entries are
// undelivered), the lookup keys, the kernel state, users, sessions, calls,
// approvals and signatures; that the result has the layout of a fresh store
// and verifies; and that the journal goes on from its high-water mark.
func TestMigrateLegacy(t *testing.T) {
	ctx := context.Background()
	var m legacyManifest
	must(t, json.Unmarshal(gunzip(t, "legacy-v11.json.gz"), &m))
	dir := legacyDir(t)
	if _, err := OpenReadOnly(dir); !errors.Is(err, ErrSchemaOutdated) {
		t.Fatalf("OpenReadOnly before the migration = %v, want ErrSchemaOutdated", err)
	}
	kernel := map[string][]map[string]*string{}
	for _, table := range legacyKernelTables {
		kernel[table] = dumpQuery(t, rawDB(t, dir), `SELECT * FROM `+table+` ORDER BY 1, 2`)
	}
	s := openAt(t, dir, Options{})

	entries, err := s.After(0, 0)
	must(t, err)
	if len(entries) != len(m.Entries) {
		t.Fatalf("%d entries after the migration, want %d", len(entries), len(m.Entries))
	}
	byThread, byConv := map[string][]int64{}, map[string][]int64{}
	for i, e := range entries {
		w := m.Entries[i]
		got := fmt.Sprintf("%d %d %q %q %s %s %q %q %q %q %x %q", e.Seq, e.Time.UnixNano(), e.Thread, e.Conversation,
			e.Direction, e.Kind, e.From, e.To, e.Listener, e.PayloadTag, e.SHA256, e.Diagnostics)
		want := fmt.Sprintf("%d %d %q %q %s %s %q %q %q %q %s %q", w.Seq, w.TimeNS, w.Thread, w.Conversation,
			w.Direction, w.Kind, w.From, w.To, w.Listener, w.PayloadTag, w.SHA256, w.Diagnostics)
		if got != want {
			t.Fatalf("entry %d:\n got %s\nwant %s", i, got, want)
		}
		if sum := sha256.Sum256(e.Bytes); hex.EncodeToString(sum[:]) != w.SHA256 {
			t.Fatalf("seq %d: the bytes changed", e.Seq)
		}
		byThread[e.Thread] = append(byThread[e.Thread], e.Seq)
		byConv[e.Conversation] = append(byConv[e.Conversation], e.Seq)
	}
	var tombs []int64
	for _, ts := range tombstones(t, s) {
		tombs = append(tombs, ts.Seq)
	}
	if d := cmp.Diff(m.Tombstoned, tombs); d != "" {
		t.Errorf("tombstones (-want +got):\n%s", d)
	}
	und, err := s.Undelivered()
	must(t, err)
	var undSeqs []int64
	for _, e := range und {
		undSeqs = append(undSeqs, e.Seq)
	}
	if d := cmp.Diff(m.Undelivered, undSeqs); d != "" {
		t.Errorf("undelivered (-want +got):\n%s", d)
	}
	for _, id := range []string{"thread-0001", "thread-0100", "thread-0188", ""} {
		es, err := s.Thread(id)
		must(t, err)
		if d := cmp.Diff(byThread[id], seqsOf(es)); d != "" {
			t.Errorf("Thread(%q) (-want +got):\n%s", id, d)
		}
	}
	for _, id := range []string{"conv-000", "conv-096"} {
		es, err := s.Conversation(id)
		must(t, err)
		if d := cmp.Diff(byConv[id], seqsOf(es)); d != "" {
			t.Errorf("Conversation(%q) (-want +got):\n%s", id, d)
		}
	}
	if last, err := s.LastSeq(); err != nil || last != m.HighSeq {
		t.Errorf("LastSeq = %d, %v; want %d", last, err, m.HighSeq)
	}
	rep, err := s.Verify(ctx, nil)
	must(t, err)
	if !rep.OK() || rep.Rows != int64(len(m.Entries)) || rep.Tombstones != int64(len(m.Tombstoned)) {
		t.Errorf("Verify after the migration: %d rows, %d tombstones, faults %v", rep.Rows, rep.Tombstones, rep.Faults)
	}

	threads, err := s.LoadThreads()
	must(t, err)
	watchers, err := s.LoadWatchers()
	must(t, err)
	slots, err := s.LoadSlots()
	must(t, err)
	if len(threads) != len(m.Threads) || len(watchers) != len(m.Threads) || len(slots) != len(m.Threads) {
		t.Errorf("kernel state: %d threads, %d watchers, %d slots; want %d of each", len(threads), len(watchers),
			len(slots), len(m.Threads))
	}
	users, err := s.ListUsers(ctx)
	must(t, err)
	var names []string
	for _, u := range users {
		names = append(names, u.Name)
	}
	if d := cmp.Diff(m.Users, names); d != "" {
		t.Errorf("users (-want +got):\n%s", d)
	}
	if _, err := s.GetSession(ctx, "tok"); err != nil {
		t.Errorf("session: %v", err)
	}
	calls, err := s.Calls(CallFilter{})
	must(t, err)
	approvals, err := s.Approvals(ctx, ApprovalFilter{})
	must(t, err)
	sigs := 0
	must(t, s.RememberedSignatures(ctx, time.Now(), func([]byte, time.Time) { sigs++ }))
	if len(calls) != m.Calls || len(approvals) != len(m.Approvals) || sigs != m.Signatures {
		t.Errorf("%d calls, %d approvals, %d signatures; want %d, %d, %d", len(calls), len(approvals), sigs,
			m.Calls, len(m.Approvals), m.Signatures)
	}

	seq, err := s.AppendSync(ctx, testEntry(1, "after-migration"))
	must(t, err)
	if seq != m.HighSeq+1 {
		t.Errorf("first append after the migration got seq %d, want %d", seq, m.HighSeq+1)
	}
	if next, err := s.AppendCall(CallRow{Time: time.Now(), Backend: "b"}); err != nil || next != int64(m.Calls)+1 {
		t.Errorf("AppendCall = %d, %v; want id %d", next, err, m.Calls+1)
	}
	must(t, s.Close())

	fresh, freshDir := openTest(t, Options{})
	must(t, fresh.Close())
	if d := cmp.Diff(columns(t, rawDB(t, freshDir)), columns(t, rawDB(t, dir))); d != "" {
		t.Errorf("the migrated layout differs from a fresh one (-fresh +migrated):\n%s", d)
	}
	if v := userVersion(t, dir); v != layoutVersion {
		t.Errorf("user_version = %d, want %d", v, layoutVersion)
	}
	checkLegacyReads(t, dir, m)
	db := rawDB(t, dir)
	checkKernelTablesWithoutRowid(t, db)
	for _, table := range legacyKernelTables {
		// The legacy columns, read from the migrated table.
		var cols []string
		for c := range kernel[table][0] {
			cols = append(cols, c)
		}
		slices.Sort(cols)
		got := dumpQuery(t, db, `SELECT `+strings.Join(cols, ", ")+` FROM `+table+` ORDER BY 1, 2`)
		if d := cmp.Diff(kernel[table], got); d != "" || len(got) == 0 {
			t.Errorf("%s after the migration (-legacy +migrated):\n%s", table, d)
		}
	}
	var cursors []string
	rows, err := db.Query(`SELECT listener || '/' || profile || '=' || swept_seq FROM journal_sweeps ORDER BY listener`)
	must(t, err)
	for rows.Next() {
		var c string
		must(t, rows.Scan(&c))
		cursors = append(cursors, c)
	}
	must(t, rows.Err())
	rows.Close()
	if d := cmp.Diff([]string{"/=0", "shouter/=0", "sink/=0", "tool/=714"}, cursors); d != "" {
		t.Errorf("sweep cursors after the migration (-want +got):\n%s", d)
	}
}

// checkLegacyReads checks that every entry and tombstone of the legacy
// fixture, migrated into dir, reads as the manifest m records it, through
// the SQL journal view and through a read-only Reader (what `xmlpipe
// journal` reads): each entry with its columns, digest and profile NULL
// (not recorded), each tombstone pruned without metadata. Entries journaled
// after the migration (above m.HighSeq) are left out.
func checkLegacyReads(t *testing.T, dir string, m legacyManifest) {
	t.Helper()
	var want []string
	pruned := map[int64]bool{}
	for _, seq := range m.Tombstoned {
		pruned[seq] = true
	}
	for _, w := range m.Entries {
		for len(m.Tombstoned) > 0 && m.Tombstoned[0] < w.Seq {
			want, m.Tombstoned = append(want, fmt.Sprintf("%d pruned", m.Tombstoned[0])), m.Tombstoned[1:]
		}
		want = append(want, fmt.Sprintf("%d %d %q %q %s %s %q %q %q %q %s %q profile NULL", w.Seq, w.TimeNS, w.Thread,
			w.Conversation, w.Direction, w.Kind, w.From, w.To, w.Listener, w.PayloadTag, w.SHA256, w.Diagnostics))
	}
	for _, seq := range m.Tombstoned {
		want = append(want, fmt.Sprintf("%d pruned", seq))
	}

	var view []string
	for _, v := range dumpQuery(t, rawDB(t, dir), fmt.Sprintf(`SELECT * FROM journal WHERE seq <= %d ORDER BY seq`, m.HighSeq)) {
		if v["pruned"] != nil {
			if v["thread"] != nil || v["envelope"] != nil || v["time_ns"] != nil {
				t.Errorf("seq %s: pruned with metadata: %v", *v["seq"], v)
			}
			view = append(view, *v["seq"]+" pruned")
			continue
		}
		profile := "NULL"
		if v["profile"] != nil {
			profile = fmt.Sprintf("%q", *v["profile"])
		}
		sum := sha256.Sum256([]byte(*v["envelope"]))
		view = append(view, fmt.Sprintf("%s %s %q %q %s %s %q %q %q %q %x %q profile %s", *v["seq"], *v["time_ns"],
			*v["thread"], *v["conversation"], *v["direction"], *v["kind"], *v["sender"], *v["recipient"], *v["listener"],
			*v["root"], sum, *v["diagnostics"], profile))
	}
	if d := cmp.Diff(want, view); d != "" {
		t.Errorf("the journal view after the migration (-fixture +view):\n%s", d)
	}

	r, err := OpenReadOnly(dir)
	must(t, err)
	defer r.Close()
	positions, err := r.PositionsAfter(0, 0)
	must(t, err)
	var read []string
	for _, p := range positions {
		e := p.Entry
		if p.Seq > m.HighSeq {
			break
		}
		if p.Pruned != nil {
			if !p.Pruned.NoMetadata {
				t.Errorf("seq %d: pruned with metadata: %+v", p.Seq, p.Pruned)
			}
			read = append(read, fmt.Sprintf("%d pruned", p.Seq))
			continue
		}
		profile := fmt.Sprintf("%q", e.Profile)
		if e.ProfileUnknown {
			profile = "NULL"
		}
		if sha256.Sum256(e.Bytes) != e.SHA256 {
			t.Errorf("seq %d: the bytes do not match the digest", e.Seq)
		}
		read = append(read, fmt.Sprintf("%d %d %q %q %s %s %q %q %q %q %x %q profile %s", e.Seq, e.Time.UnixNano(),
			e.Thread, e.Conversation, e.Direction, e.Kind, e.From, e.To, e.Listener, e.PayloadTag, e.SHA256,
			e.Diagnostics, profile))
	}
	if d := cmp.Diff(want, read); d != "" {
		t.Errorf("the journal read-only after the migration (-fixture +read):\n%s", d)
	}
}

// TestMigrateLegacyFailsWhole: a legacy segment that does not decode fails
// the migration and leaves the database in the legacy layout.
func TestMigrateLegacyFailsWhole(t *testing.T) {
	dir := legacyDir(t)
	db := rawDB(t, dir)
	if _, err := db.Exec(`DROP TRIGGER journal_segments_only_shrink;
		UPDATE journal_segments SET data = x'0a00' WHERE first_seq = (SELECT max(first_seq) FROM journal_segments)`); err != nil {
		t.Fatal(err)
	}
	before := schemaText(t, db)
	db.Close()
	_, err := Open(dir, Options{Logger: quietLogger()})
	if !errors.Is(err, errCorruptSegment) {
		t.Fatalf("Open with a corrupt legacy segment = %v, want errCorruptSegment", err)
	}
	if after := schemaText(t, rawDB(t, dir)); after != before {
		t.Errorf("the failed migration changed the database:\n%s", cmp.Diff(before, after))
	}
}

// TestMigrateLegacyV12: a legacy database of schema version 12, which
// already has the correlation refs of threads and slots, keeps them and
// migrates to the layout of a fresh store.
func TestMigrateLegacyV12(t *testing.T) {
	dir := legacyDir(t)
	db := rawDB(t, dir)
	if _, err := db.Exec(`ALTER TABLE threads ADD COLUMN ref TEXT NOT NULL DEFAULT '';
		ALTER TABLE slots ADD COLUMN in_reply_to TEXT NOT NULL DEFAULT '';
		UPDATE threads SET ref = 'call_1' WHERE id = 'thread-0001';
		UPDATE slots SET in_reply_to = 'call_2' WHERE thread = 'thread-0002';
		INSERT INTO schema_version (version, name, applied_at) VALUES (12, 'correlation refs of threads and slots', 1)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s := openAt(t, dir, Options{})
	threads, err := s.LoadThreads()
	must(t, err)
	slots, err := s.LoadSlots()
	must(t, err)
	refs := map[string]string{}
	for _, th := range threads {
		refs["thread "+th.ID] = th.Ref
	}
	for _, sl := range slots {
		refs["slot "+sl.Thread] = sl.InReplyTo
	}
	if refs["thread thread-0001"] != "call_1" || refs["slot thread-0002"] != "call_2" || refs["thread thread-0002"] != "" {
		t.Errorf("correlation refs after the migration: %v", refs)
	}
	must(t, s.Close())
	fresh, freshDir := openTest(t, Options{})
	must(t, fresh.Close())
	if d := cmp.Diff(columns(t, rawDB(t, freshDir)), columns(t, rawDB(t, dir))); d != "" {
		t.Errorf("the migrated layout differs from a fresh one (-fresh +migrated):\n%s", d)
	}
}

// seqsOf returns the seqs of es.
func seqsOf(es []Entry) []int64 {
	var out []int64
	for _, e := range es {
		out = append(out, e.Seq)
	}
	return out
}

// legacySegmentRows returns the (first, last, entries, data) of the legacy
// fixture's segments, as fuzz seeds.
func legacySegmentRows(t testing.TB) [][4]any {
	t.Helper()
	dir := legacyDir(t)
	rows, err := rawDB(t, dir).Query(`SELECT first_seq, last_seq, entries, data FROM journal_segments ORDER BY first_seq LIMIT 4`)
	must(t, err)
	defer rows.Close()
	var out [][4]any
	for rows.Next() {
		var (
			first, last, n int64
			data           []byte
		)
		must(t, rows.Scan(&first, &last, &n, &data))
		out = append(out, [4]any{first, last, n, data})
	}
	must(t, rows.Err())
	return out
}

// TestDecodeSegmentRejects: decodeSegment refuses a legacy segment that is
// cut short, mislabelled or of another codec.
func TestDecodeSegmentRejects(t *testing.T) {
	r := legacySegmentRows(t)[0]
	first, last, n, data := r[0].(int64), r[1].(int64), r[2].(int64), r[3].([]byte)
	if _, err := decodeSegment(first, last, n, segmentCodecS2, data); err != nil {
		t.Fatalf("the fixture's first segment: %v", err)
	}
	tests := []struct {
		name              string
		first, last, n, c int64
		data              []byte
	}{
		{"range starting below 1", 0, last, n, segmentCodecS2, data},
		{"empty range", first, first - 1, n, segmentCodecS2, data},
		{"unknown codec", first, last, n, 1, data},
		{"not S2", first, last, n, segmentCodecS2, []byte("<message/>")},
		{"truncated block", first, last, n, segmentCodecS2, data[:len(data)-1]},
		{"count differs from the row", first, last, n + 1, segmentCodecS2, data},
		{"range too short for the seqs", first, first, n, segmentCodecS2, data},
		{"trailing garbage", first, last, n, segmentCodecS2, append(bytes.Clone(data), 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if s, err := decodeSegment(tt.first, tt.last, tt.n, tt.c, tt.data); !errors.Is(err, errCorruptSegment) {
				t.Errorf("decodeSegment = %+v, %v; want errCorruptSegment", s, err)
			}
		})
	}
}
