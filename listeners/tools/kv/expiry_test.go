package kv

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/tools"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestConversationNamespaceExpires: a conversation's namespace (and a
// thread's) is gone DefaultConversationTTL after its last write — at once
// for every call, and from the table at the next sweep — while a write
// keeps it for another period and a named namespace never expires as a
// whole.
func TestConversationNamespaceExpires(t *testing.T) {
	clk := &clock{t: time.Unix(1_700_000_000, 0)}
	s, err := Open(t.TempDir(), clk.now)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tool := &Tool{Store: s, Policy: tools.Fixed(tools.Config{})}
	call := func(conv, thread string, p KeyValue) *KeyValueResult {
		t.Helper()
		md := xmlpipe.Metadata{From: "agent", ThreadID: thread, Conversation: conv, User: "alice"}
		resp, err := tool.Handle(context.Background(), &p, md)
		if err != nil {
			t.Fatal(err)
		}
		r := resp.(*xmlpipe.RespondResponse).Payload.(*KeyValueResult)
		if r.Error != "" {
			t.Fatalf("%s %s: %s", p.Op, p.Key, r.Error)
		}
		return r
	}
	call("old", "t1", KeyValue{Op: "set", Key: "k", Value: "old"})
	call("", "bare", KeyValue{Op: "set", Key: "k", Value: "thread"})
	call("kept", "t2", KeyValue{Op: "set", Key: "k", Value: "kept"})
	call("old", "t1", KeyValue{Op: "set", Key: "n", Value: "named", Namespace: "notes"})
	clk.advance(DefaultConversationTTL - time.Hour)
	call("kept", "t3", KeyValue{Op: "set", Key: "k2", Value: "again"}) // a write keeps the whole namespace
	clk.advance(2 * time.Hour)
	for _, tc := range []struct {
		conv, thread, key, ns string
		found                 bool
	}{
		{"old", "t1", "k", "", false},
		{"", "bare", "k", "", false},
		{"kept", "t2", "k", "", true},
		{"kept", "t2", "k2", "", true},
		{"old", "t1", "n", "notes", true},
	} {
		if r := call(tc.conv, tc.thread, KeyValue{Op: "get", Key: tc.key, Namespace: tc.ns}); r.Found != tc.found {
			t.Errorf("%+v: found %v, want %v", tc, r.Found, tc.found)
		}
	}
	if r := call("old", "t1", KeyValue{Op: "delete", Key: "k"}); r.Found {
		t.Errorf("delete in an expired namespace found the key")
	}
	if n, err := s.Sweep(context.Background()); err != nil || n != 1 {
		t.Errorf("sweep: %d namespaces, %v; want 1 (the thread's)", n, err)
	}
	if got := rows(t, s); got != 3 { // kept's k and k2, notes' n: old's went with its delete
		t.Errorf("%d rows left, want 3", got)
	}
	// A set in an expired namespace not swept yet begins it anew: its old
	// keys do not come back.
	call("", "bare2", KeyValue{Op: "set", Key: "a", Value: "1"})
	clk.advance(DefaultConversationTTL + time.Second)
	call("", "bare2", KeyValue{Op: "set", Key: "b", Value: "2"})
	if r := call("", "bare2", KeyValue{Op: "get", Key: "a"}); r.Found {
		t.Errorf("a key of the expired namespace came back after a set")
	}
	if n, err := s.Sweep(context.Background()); err != nil || n != 1 {
		t.Errorf("second sweep: %d namespaces, %v; want 1 (kept's)", n, err)
	}
	if got := rows(t, s); got != 2 { // notes' n and bare2's b
		t.Errorf("%d rows left, want 2", got)
	}
}

// TestConversationTTLConfigured: tool_config's conversation_ttl replaces
// the default, the writer's setting deciding.
func TestConversationTTLConfigured(t *testing.T) {
	clk := &clock{t: time.Unix(1_700_000_000, 0)}
	s, err := Open("", clk.now)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tool := &Tool{Store: s, Policy: tools.Fixed(tools.Config{ConversationTTL: time.Hour})}
	md := xmlpipe.Metadata{From: "agent", ThreadID: "t", Conversation: "c"}
	run := func(p KeyValue) *KeyValueResult {
		t.Helper()
		resp, err := tool.Handle(context.Background(), &p, md)
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*xmlpipe.RespondResponse).Payload.(*KeyValueResult)
	}
	run(KeyValue{Op: "set", Key: "k", Value: "v"})
	clk.advance(59 * time.Minute)
	if r := run(KeyValue{Op: "get", Key: "k"}); !r.Found {
		t.Fatalf("expired early: %+v", r)
	}
	clk.advance(2 * time.Minute)
	if r := run(KeyValue{Op: "get", Key: "k"}); r.Found {
		t.Fatalf("conversation_ttl not honoured: %+v", r)
	}
	if n, err := s.Sweep(context.Background()); err != nil || n != 1 {
		t.Fatalf("sweep: %d, %v", n, err)
	}
	if got := rows(t, s); got != 0 {
		t.Fatalf("%d rows left", got)
	}
}

// TestSweepInBatches: a sweep of more expired namespaces than one batch
// takes them all, a batch at a time, and drops expired keys too.
func TestSweepInBatches(t *testing.T) {
	clk := &clock{t: time.Unix(1_700_000_000, 0)}
	s, err := Open("", clk.now)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for i := range 3*sweepBatch + 7 {
		if err := s.Set(ctx, ConversationPrefix+time.Duration(i).String(), "k", "v", 0, Limits{Idle: time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Set(ctx, "shared:team", "short", "v", time.Second, Limits{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Set(ctx, "shared:team", "long", "v", 0, Limits{}); err != nil {
		t.Fatal(err)
	}
	clk.advance(2 * time.Minute)
	if n, err := s.Sweep(ctx); err != nil || n != 3*sweepBatch+7 {
		t.Fatalf("sweep: %d, %v", n, err)
	}
	if got := rows(t, s); got != 1 {
		t.Fatalf("%d rows left, want 1 (team's long)", got)
	}
}

// rows counts the table's rows, live or not.
func rows(t *testing.T, s *Store) int {
	t.Helper()
	var n int
	if err := s.db.QueryRow(`SELECT count(*) FROM kv`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSweepingSweepsAtOnceAndStops: Sweeping sweeps as it begins, and
// returns once its context ends.
func TestSweepingSweepsAtOnceAndStops(t *testing.T) {
	clk := &clock{t: time.Unix(1_700_000_000, 0)}
	s, err := Open("", clk.now)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Set(context.Background(), ConversationPrefix+"c", "k", "v", 0, Limits{Idle: time.Minute}); err != nil {
		t.Fatal(err)
	}
	clk.advance(2 * time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Sweeping(ctx, time.Hour, nil)
	}()
	for deadline := time.Now().Add(60 * time.Second); rows(t, s) != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the first sweep never came")
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("Sweeping did not return once cancelled")
	}
}

// TestMigrationGivesStoredConversationsTheirExpiry: a version-1 tools.db
// (before namespaces expired) is moved to version 2 on open: the
// conversations' and threads' namespaces it holds expire
// DefaultConversationTTL after the migration, named ones never.
func TestMigrationGivesStoredConversationsTheirExpiry(t *testing.T) {
	dir := t.TempDir()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "tools.db"))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE TABLE kv (namespace TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, expires_at INTEGER, PRIMARY KEY (namespace, key))`,
		`INSERT INTO kv VALUES ('conversation:c1', 'k', 'v', NULL), ('thread:t1', 'k', 'v', NULL), ('user:0::notes', 'k', 'v', NULL)`,
		`PRAGMA user_version = 1`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	clk := &clock{t: time.Unix(1_700_000_000, 0)}
	s, err := Open(dir, clk.now)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	found := func(ns string) bool {
		_, ok, err := s.Get(ctx, ns, "k")
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	clk.advance(DefaultConversationTTL - time.Second)
	for _, ns := range []string{"conversation:c1", "thread:t1", "user:0::notes"} {
		if !found(ns) {
			t.Errorf("%s expired early", ns)
		}
	}
	clk.advance(2 * time.Second)
	for ns, want := range map[string]bool{"conversation:c1": false, "thread:t1": false, "user:0::notes": true} {
		if got := found(ns); got != want {
			t.Errorf("%s found %v after the expiry, want %v", ns, got, want)
		}
	}
}
