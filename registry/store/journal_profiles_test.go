package store

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// createLayout2 writes, in dir, a database of layout 2 (the journal without
// profiles) from testdata/schema-v2.sql, the layout 2 schema as the store
// wrote it, and fills its journal: three rows of listener "tool" (seq 1-3),
// a tombstone for seq 4 and the sweep cursor of "tool" at seq 1.
func createLayout2(t *testing.T, dir string) {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("testdata", "schema-v2.sql"))
	must(t, err)
	// The file lists "-- type name" blocks sorted by type; tables must
	// come before the indexes, triggers and views over them.
	// A virtual table creates its shadow tables itself.
	type object struct{ name, stmt string }
	byType := map[string][]object{}
	for _, block := range strings.Split(string(text), "\n-- ") {
		block = strings.TrimPrefix(block, "-- ")
		head, stmt, _ := strings.Cut(block, "\n")
		typ, name, _ := strings.Cut(head, " ")
		byType[typ] = append(byType[typ], object{name, stmt})
	}
	db := rawDB(t, dir)
	for _, typ := range []string{"table", "index", "trigger", "view"} {
		for _, o := range byType[typ] {
			var n int
			must(t, db.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name = ?`, o.name).Scan(&n))
			if n > 0 {
				continue
			}
			stmt := o.stmt
			if _, err := db.Exec(stmt); err != nil {
				t.Fatalf("layout 2 schema: %v\n%s", err, stmt)
			}
		}
	}
	ins := `INSERT INTO journal_rows (seq, time_ns, thread, conversation, direction, kind, sender, recipient, listener,
		root, sha256, envelope, diagnostics) VALUES (?, ?, ?, ?, 'inbound', 'message', 'greeter', 'tool', 'tool', 'Greeting', ?, ?, '')`
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano()
	for seq := int64(1); seq <= 3; seq++ {
		e := testEntry(int(seq), "old-thread")
		sum := sha256Of(e.Bytes)
		if _, err := db.Exec(ins, seq, base+seq, e.Thread, e.Conversation, sum[:], string(e.Bytes)); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{
		`INSERT INTO journal_tombstones (seq, deleted_at, reason) VALUES (4, ` + strconv.FormatInt(base+10, 10) + `, 'prune_on_delivery')`,
		`INSERT INTO journal_state (id, high_seq, delivered_seq) VALUES (1, 4, 3)`,
		`INSERT INTO journal_listeners (listener, swept_seq) VALUES ('tool', 1)`,
		`PRAGMA user_version = 2`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	must(t, db.Close())
}

// journalView is one row of the journal view, as the tests read it.
type journalView struct {
	Seq                      int64
	Thread, Listener, Kind   sql.NullString
	Profile, Pruned, Payload sql.NullString
	Sender, Recipient, Root  sql.NullString
	HasTime                  bool
}

// readJournalView reads the journal view of the database in dir, by seq.
func readJournalView(t *testing.T, dir string) []journalView {
	t.Helper()
	rows, err := rawDB(t, dir).Query(`SELECT seq, thread, listener, kind, profile, pruned, payload, sender, recipient, root,
		time IS NOT NULL FROM journal ORDER BY seq`)
	must(t, err)
	defer rows.Close()
	var out []journalView
	for rows.Next() {
		var v journalView
		must(t, rows.Scan(&v.Seq, &v.Thread, &v.Listener, &v.Kind, &v.Profile, &v.Pruned, &v.Payload, &v.Sender,
			&v.Recipient, &v.Root, &v.HasTime))
		out = append(out, v)
	}
	must(t, rows.Err())
	return out
}

// TestMigrateLayout2 opens a database of layout 2 and checks the one-time
// migration to layout 3: the journal rows are kept with profile NULL (not
// recorded), the old tombstone is kept without metadata, the sweep cursor
// moves to journal_sweeps (profile ""), the view shows the profile and
// pruned columns, the result has the layout of a fresh store, it verifies,
// and new entries record their profile.
func TestMigrateLayout2(t *testing.T) {
	dir := t.TempDir()
	createLayout2(t, dir)
	s := openAt(t, dir, Options{})
	ctx := context.Background()
	if v := userVersion(t, dir); v != layoutVersion {
		t.Fatalf("user_version = %d, want %d", v, layoutVersion)
	}

	old, err := s.After(0, 0)
	must(t, err)
	if len(old) != 3 {
		t.Fatalf("after the migration %d entries, want 3", len(old))
	}
	for _, e := range old {
		if !e.ProfileUnknown || e.Profile != "" {
			t.Errorf("seq %d: profile %q unknown=%v, want unknown", e.Seq, e.Profile, e.ProfileUnknown)
		}
	}
	var cursor int64
	must(t, rawDB(t, dir).QueryRow(`SELECT swept_seq FROM journal_sweeps WHERE listener = 'tool' AND profile = ''`).Scan(&cursor))
	if cursor != 1 {
		t.Errorf("tool's sweep cursor = %d, want 1", cursor)
	}
	var tables int
	must(t, rawDB(t, dir).QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name = 'journal_listeners'`).Scan(&tables))
	if tables != 0 {
		t.Errorf("journal_listeners survived the migration")
	}

	e := testEntry(5, "new-thread")
	e.Listener, e.Profile = "tool", "concierge"
	seq, err := s.AppendSync(ctx, e)
	must(t, err)
	got, err := s.After(seq-1, 1)
	must(t, err)
	if len(got) != 1 || got[0].Profile != "concierge" || got[0].ProfileUnknown {
		t.Fatalf("new entry: %+v", got)
	}
	rep, err := s.Verify(ctx, nil)
	must(t, err)
	if !rep.OK() {
		t.Errorf("Verify after the migration: %+v", rep.Faults)
	}
	must(t, s.Close())

	view := readJournalView(t, dir)
	if len(view) != 5 {
		t.Fatalf("journal view: %d rows, want 5: %+v", len(view), view)
	}
	for _, v := range view[:3] {
		if v.Profile.Valid || v.Pruned.Valid || !v.Payload.Valid || !v.HasTime {
			t.Errorf("old row %d: %+v, want profile NULL, not pruned, a payload", v.Seq, v)
		}
	}
	if v := view[3]; v.Seq != 4 || !strings.HasPrefix(v.Pruned.String, "prune_on_delivery at 2026-01-02T03:04:05Z") ||
		v.Thread.Valid || v.Payload.Valid {
		t.Errorf("old tombstone: %+v, want pruned without metadata", v)
	}
	if v := view[4]; v.Profile.String != "concierge" || v.Pruned.Valid {
		t.Errorf("new row: %+v, want profile concierge", v)
	}

	// The migrated layout is the fresh one.
	fresh, freshDir := openTest(t, Options{})
	must(t, fresh.Close())
	if d := cmp.Diff(columns(t, rawDB(t, freshDir)), columns(t, rawDB(t, dir))); d != "" {
		t.Errorf("migrated layout differs from a fresh one (-fresh +migrated):\n%s", d)
	}
}

// TestSweepByProfile journals entries of one listener under profiles with
// different retention and checks that each sweep prunes exactly the
// entries their profile's policy no longer keeps, and that the journal
// view keeps every pruned entry's metadata, saying why it was pruned.
func TestSweepByProfile(t *testing.T) {
	clock := newFakeClock()
	s, dir := openTest(t, Options{Clock: clock.Now})
	ctx := context.Background()
	pod := Retention{Policy: PruneOnDelivery}
	hour := Retention{Policy: Window, Window: time.Hour}
	policies := map[string]Retention{
		"":                {Policy: RetainForever}, // the listener's own
		"concierge":       pod,
		"coder":           {Policy: RetainForever},
		"audit":           hour,
		"audit&concierge": Either(hour, pod),
	}
	policy := func(listener, profile string) Retention {
		if listener != "tool" {
			t.Errorf("sweep asked for listener %q", listener)
		}
		return policies[profile]
	}
	add := func(profile string, kind Kind) int64 {
		e := testEntry(0, "t-"+profile)
		e.Listener, e.Profile, e.Kind = "tool", profile, kind
		seq, err := s.AppendSync(ctx, e)
		must(t, err)
		return seq
	}
	// seq 1 "", 2-3 concierge, 4 coder, 5 audit, 6 audit&concierge, 7 a
	// concierge <huh> (never delivered: kept for good).
	for _, p := range []string{"", "concierge", "concierge", "coder", "audit", "audit&concierge"} {
		add(p, Message)
	}
	add("concierge", Huh)
	for _, seq := range []int64{2, 4, 6} {
		must(t, s.MarkDelivered(seq))
	}
	flush(t, s)

	clock.Advance(30 * time.Minute)
	n, err := s.Sweep(ctx, policy)
	must(t, err)
	if n != 1 {
		t.Fatalf("sweep at 30 min deleted %d, want 1", n)
	}
	if d := cmp.Diff([]int64{1, 3, 4, 5, 6, 7}, seqs(t, s)); d != "" {
		t.Fatalf("after 30 min (-want +got):\n%s", d)
	}

	clock.Advance(90 * time.Minute)
	n, err = s.Sweep(ctx, policy)
	must(t, err)
	if n != 2 {
		t.Fatalf("sweep at 2 h deleted %d, want 2", n)
	}
	if d := cmp.Diff([]int64{1, 3, 4, 7}, seqs(t, s)); d != "" {
		t.Fatalf("after 2 h (-want +got):\n%s", d)
	}
	rep, err := s.Verify(ctx, nil)
	must(t, err)
	if !rep.OK() {
		t.Errorf("Verify: %+v", rep.Faults)
	}
	must(t, s.Close())

	view := readJournalView(t, dir)
	if len(view) != 7 {
		t.Fatalf("journal view: %d rows, want 7", len(view))
	}
	pruned := map[int64]string{2: "prune_on_delivery at ", 5: "window(1h) at ", 6: "prune_on_delivery+window(1h) at "}
	for _, v := range view {
		want := []string{"", "concierge", "concierge", "coder", "audit", "audit&concierge", "concierge"}[v.Seq-1]
		if !v.Profile.Valid || v.Profile.String != want {
			t.Errorf("seq %d: profile %+v, want %q", v.Seq, v.Profile, want)
		}
		if v.Thread.String != "t-"+want || v.Listener.String != "tool" || v.Sender.String != "greeter" ||
			v.Recipient.String != "shouter" || v.Root.String != "Greeting" || !v.HasTime {
			t.Errorf("seq %d: metadata lost: %+v", v.Seq, v)
		}
		reason, isPruned := pruned[v.Seq]
		switch {
		case isPruned && (!strings.HasPrefix(v.Pruned.String, reason) || v.Payload.Valid):
			t.Errorf("seq %d: pruned %+v payload %+v, want pruned %q… and no payload", v.Seq, v.Pruned, v.Payload, reason)
		case !isPruned && (v.Pruned.Valid || !v.Payload.Valid):
			t.Errorf("seq %d: pruned %+v payload valid %v, want kept", v.Seq, v.Pruned, v.Payload.Valid)
		}
	}
}

// TestEither checks how two retention policies combine: an entry is
// deleted only when both would delete it.
func TestEither(t *testing.T) {
	forever := Retention{Policy: RetainForever}
	pod := Retention{Policy: PruneOnDelivery}
	day := Retention{Policy: RetainDays, Days: 1}
	hour := Retention{Policy: Window, Window: time.Hour}
	week := Retention{Policy: Window, Window: 7 * 24 * time.Hour}
	tests := []struct {
		a, b, want Retention
	}{
		{forever, pod, forever},
		{pod, Retention{}, forever},
		{hour, forever, forever},
		{pod, pod, pod},
		{hour, week, week},
		{week, day, week},
		{hour, day, day},
		{pod, hour, Retention{Policy: PruneOnDelivery, Window: time.Hour}},
		{day, pod, Retention{Policy: PruneOnDelivery, Window: 24 * time.Hour}},
		{Retention{Policy: PruneOnDelivery, Window: time.Hour}, week, Retention{Policy: PruneOnDelivery, Window: 7 * 24 * time.Hour}},
	}
	for _, tt := range tests {
		for _, got := range []Retention{Either(tt.a, tt.b), Either(tt.b, tt.a)} {
			if got != tt.want {
				t.Errorf("Either(%v, %v) = %+v, want %+v", tt.a, tt.b, got, tt.want)
			}
		}
	}
}
