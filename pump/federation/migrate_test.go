package federation

import (
	"bytes"
	"crypto/sha256"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/registry/store"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// legacySchema is the federation.db schema of the versions before the
// state moved into the store, as their openDB created it.
const legacySchema = `
CREATE TABLE IF NOT EXISTS outbox (
	seq INTEGER PRIMARY KEY AUTOINCREMENT,
	gateway TEXT NOT NULL,
	id TEXT NOT NULL UNIQUE,
	env BLOB NOT NULL,
	created INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS seen (
	hash BLOB PRIMARY KEY,
	at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS seen_at ON seen(at);
CREATE TABLE IF NOT EXISTS served (
	conv TEXT PRIMARY KEY,
	gateway TEXT NOT NULL,
	link_thread TEXT NOT NULL,
	created INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS calls (
	link_thread TEXT PRIMARY KEY,
	gateway TEXT NOT NULL,
	caller_thread TEXT NOT NULL,
	digest BLOB NOT NULL,
	answer BLOB,
	created INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS calls_caller ON calls(gateway, caller_thread, digest);
CREATE TABLE IF NOT EXISTS imports (
	gateway TEXT NOT NULL,
	tag TEXT NOT NULL,
	name TEXT NOT NULL,
	description TEXT NOT NULL,
	xsd BLOB NOT NULL,
	PRIMARY KEY (gateway, tag)
);
CREATE TABLE IF NOT EXISTS received (
	conv TEXT PRIMARY KEY,
	at INTEGER NOT NULL,
	done INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS received_at ON received(at);
CREATE TABLE IF NOT EXISTS received_since (at INTEGER NOT NULL);`

// legacyState is what TestMigrateLegacyState writes into a federation.db.
type legacyState struct {
	doneThread   string // link thread of a call received and journaled
	servedThread string // link thread of a call whose conversation runs
	callThread   string // a call this side made, answered meanwhile
	seenEnv      []byte // an envelope received and processed
}

// writeLegacyFile builds dir/federation.db as the earlier versions left
// it — WAL mode, the owner's and others' permissions — for callee key
// bKey's gateway "a".
func writeLegacyFile(t *testing.T, dir string, secret []byte) legacyState {
	t.Helper()
	path := filepath.Join(dir, legacyStateFile)
	db, err := sql.Open("sqlite", "file:"+path+"?_journal_mode=WAL&_pragma=synchronous(NORMAL)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ls := legacyState{doneThread: stage.NewThreadID(), servedThread: stage.NewThreadID(), callThread: stage.NewThreadID(),
		seenEnv: []byte("<message>an answer received</message>")}
	h := sha256.Sum256(ls.seenEnv)
	now := time.Now().UnixNano()
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{legacySchema, nil},
		{`INSERT INTO received_since (at) VALUES (?)`, []any{int64(12345)}},
		{`INSERT INTO outbox (gateway, id, env, created) VALUES ('a', 'first', '<legacy-1/>', ?)`, []any{now}},
		{`INSERT INTO outbox (gateway, id, env, created) VALUES ('a', 'second', '<legacy-2/>', ?)`, []any{now}},
		{`INSERT INTO seen (hash, at) VALUES (?, ?)`, []any{h[:], now}},
		{`INSERT INTO received (conv, at, done) VALUES (?, ?, 1)`, []any{derivedThread(secret, "a", ls.doneThread), now}},
		{`INSERT INTO received (conv, at, done) VALUES (?, ?, 0)`, []any{derivedThread(secret, "a", ls.servedThread), now}},
		{`INSERT INTO served (conv, gateway, link_thread, created) VALUES (?, 'a', ?, ?)`,
			[]any{derivedThread(secret, "a", ls.servedThread), ls.servedThread, now}},
		{`INSERT INTO calls (link_thread, gateway, caller_thread, digest, answer, created) VALUES (?, 'a', 'caller', x'01', '<answer/>', ?)`,
			[]any{ls.callThread, now}},
		{`INSERT INTO imports (gateway, tag, name, description, xsd) VALUES ('a', 'Echo', 'echo', 'echoes', '<xs:schema/>')`, nil},
	} {
		if _, err := db.Exec(q.sql, q.args...); err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	return ls
}

// secretOf is the derivation secret a manager with key k uses (New).
func secretOf(seed []byte) []byte {
	s := sha256.Sum256(append([]byte("xmlpipe-federation-secret\x00"), seed...))
	return s[:]
}

// TestMigrateLegacyState: the federation.db of an earlier version is moved
// into the store at the first start — its outbox is sent in order, byte
// for byte; a received call's copy is refused; a served conversation still
// answers the peer; a recorded call and its answer, the seen hashes, the
// imports and received_since are kept — and the file is renamed, the
// owner's alone. A later start migrates nothing again, also when a crash
// left the file in place after the migration committed.
func TestMigrateLegacyState(t *testing.T) {
	aKey, bKey := newKey(t), newKey(t)
	dir := t.TempDir()
	ls := writeLegacyFile(t, dir, secretOf(bKey.Seed()))

	c1 := newCalleeIn(t, aKey, bKey, dir, nil)
	path := filepath.Join(dir, legacyStateFile)
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("federation.db still there after the migration: %v", err)
	}
	st, err := os.Stat(path + migratedSuffix)
	if err != nil {
		t.Fatal(err)
	}
	if m := st.Mode().Perm(); m != 0o600 {
		t.Errorf("the migrated file's mode is %#o, want 0600", m)
	}
	d := c1.m.db
	if want := time.Unix(0, 12345); !d.receivedSince.Equal(want) {
		t.Errorf("received_since %v, want %v", d.receivedSince, want)
	}
	if dup, err := d.seen(ls.seenEnv, time.Now()); err != nil || !dup {
		t.Errorf("a migrated hash: seen = %v, %v", dup, err)
	}
	if !d.legacySeen.Load() {
		t.Error("hashes moved from a federation.db: the state is not marked as holding hashes keyed by the hash alone")
	}
	ids, answers, err := d.openCalls("a", "caller", []byte{1})
	if err != nil || len(ids) != 1 || ids[0] != ls.callThread || string(answers[0]) != "<answer/>" {
		t.Errorf("the migrated call: %q %q %v", ids, answers, err)
	}
	if list, err := d.loadImports("a"); err != nil || len(list) != 1 || list[0].Name != "echo" {
		t.Errorf("the migrated imports: %+v %v", list, err)
	}
	if !c1.m.serving(derivedThread(c1.m.secret, "a", ls.servedThread)) {
		t.Error("the migrated served conversation is not served")
	}
	if q := c1.m.Status()[0].Queued; q != 2 {
		t.Fatalf("%d envelopes queued for the peer, want the 2 migrated", q)
	}

	r, err := dialRaw(t, c1, aKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<legacy-1/>", "<legacy-2/>"} {
		if got := r.next(); !bytes.Equal(got, []byte(want)) {
			t.Fatalf("the peer got %q, want %q (the migrated outbox in order)", got, want)
		}
	}
	// The call whose received row is done is refused as a copy.
	call := r.callOn("echo", `<Echo xmlns=""><Text>again</Text></Echo>`, ls.doneThread, time.Now())
	if ack, _ := r.send(call); ack.Type != frameAck || !ack.Duplicate {
		t.Fatalf("a copy of a call the old state received: %+v, want a duplicate", ack)
	}
	if got := c1.seen(); len(got) != 0 {
		t.Fatalf("the echo saw %q", got)
	}

	// Acknowledge the first entry: its row goes. Then stop, and put the
	// migrated file back as if a crash came between the migration's commit
	// and the rename: the next start renames it and moves nothing again.
	if err := r.ws.WriteMessage(websocket.TextMessage, frame{Type: frameAck, ID: "first"}.marshal()); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); c1.m.Status()[0].Queued != 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the acknowledged entry stayed queued")
		}
	}
	stopCallee(t, c1)
	if err := os.Rename(path+migratedSuffix, path); err != nil {
		t.Fatal(err)
	}
	c2 := newCalleeIn(t, aKey, bKey, dir, nil)
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("federation.db still there after the second start: %v", err)
	}
	if q := c2.m.Status()[0].Queued; q != 1 {
		t.Fatalf("%d envelopes queued after the second start, want 1 (the acknowledged one not back)", q)
	}
	var migrations int
	if err := c2.st.ReadDB().QueryRow(`SELECT count(*) FROM federation_migrated`).Scan(&migrations); err != nil || migrations != 1 {
		t.Fatalf("%d migrations recorded (%v), want 1", migrations, err)
	}
}

// TestMigrateRefusesACorruptFile: a federation.db that is not an SQLite
// database stops the federation from opening with an error naming it, and
// the file stays where it was (nothing is renamed, nothing moved).
func TestMigrateRefusesACorruptFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, legacyStateFile)
	if err := os.WriteFile(path, []byte("not a database at all, just text that is long enough"), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := openDB(st, nil); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("openDB over a corrupt %s: %v, want an error naming it", legacyStateFile, err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the corrupt file is gone: %v", err)
	}
	if _, err := os.Stat(path + migratedSuffix); !os.IsNotExist(err) {
		t.Fatalf("the corrupt file was renamed: %v", err)
	}
}
