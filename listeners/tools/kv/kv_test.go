package kv

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/tools"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestKeyValue(t *testing.T) {
	for _, dir := range []string{"", t.TempDir()} {
		clk := &clock{t: time.Unix(1_700_000_000, 0)}
		s, err := Open(dir, clk.now)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		tool := &Tool{Store: s, Policy: tools.Fixed(tools.Config{MaxBytes: 10})}
		call := func(thread string, p KeyValue) *KeyValueResult {
			t.Helper()
			resp, err := tool.Handle(context.Background(), &p, xmlpipe.Metadata{From: "agent", ThreadID: thread})
			if err != nil {
				t.Fatal(err)
			}
			return resp.(*xmlpipe.RespondResponse).Payload.(*KeyValueResult)
		}
		if r := call("t1", KeyValue{Op: "set", Key: "k", Value: "v1"}); r.Error != "" {
			t.Fatalf("set: %+v", r)
		}
		if r := call("t1", KeyValue{Op: "get", Key: "k"}); !r.Found || r.Value != "v1" {
			t.Fatalf("get: %+v", r)
		}
		// Another thread has its own namespace; an explicit one is shared.
		if r := call("t2", KeyValue{Op: "get", Key: "k"}); r.Found {
			t.Fatalf("other thread sees it: %+v", r)
		}
		call("t1", KeyValue{Op: "set", Key: "k", Value: "shared", Namespace: "team"})
		if r := call("t2", KeyValue{Op: "get", Key: "k", Namespace: "team"}); !r.Found || r.Value != "shared" {
			t.Fatalf("namespace: %+v", r)
		}
		// TTL expiry.
		call("t1", KeyValue{Op: "set", Key: "temp", Value: "x", TTLSeconds: 60})
		clk.advance(59 * time.Second)
		if r := call("t1", KeyValue{Op: "get", Key: "temp"}); !r.Found {
			t.Fatalf("expired early: %+v", r)
		}
		clk.advance(2 * time.Second)
		if r := call("t1", KeyValue{Op: "get", Key: "temp"}); r.Found || r.Value != "" {
			t.Fatalf("TTL not honoured: %+v", r)
		}
		if r := call("t1", KeyValue{Op: "delete", Key: "temp"}); r.Found {
			t.Fatalf("delete of an expired key: %+v", r)
		}
		if r := call("t1", KeyValue{Op: "delete", Key: "k"}); !r.Found || r.Error != "" {
			t.Fatalf("delete: %+v", r)
		}
		if r := call("t1", KeyValue{Op: "get", Key: "k"}); r.Found {
			t.Fatalf("deleted key found: %+v", r)
		}
		for _, tc := range []struct {
			p    KeyValue
			want string
		}{
			{KeyValue{Op: "get", Key: ""}, "key must be"},
			{KeyValue{Op: "get", Key: strings.Repeat("k", 257)}, "key must be"},
			{KeyValue{Op: "set", Key: "big", Value: strings.Repeat("v", 11)}, "over the size cap"},
			{KeyValue{Op: "set", Key: "neg", Value: "v", TTLSeconds: -1}, "ttl must not be negative"},
			{KeyValue{Op: "list", Key: "k"}, "unknown op"},
		} {
			if r := call("t1", tc.p); !strings.Contains(r.Error, tc.want) {
				t.Errorf("%+v: error %q, want %q", tc.p, r.Error, tc.want)
			}
		}
		ro := &Tool{Store: s, Policy: tools.Fixed(tools.Config{ReadOnly: true})}
		resp, _ := ro.Handle(context.Background(), &KeyValue{Op: "set", Key: "k", Value: "v"}, xmlpipe.Metadata{ThreadID: "t"})
		if r := resp.(*xmlpipe.RespondResponse).Payload.(*KeyValueResult); !strings.Contains(r.Error, "read-only") {
			t.Fatalf("read-only: %+v", r)
		}
	}
}

// TestNamespacesBelongToTheirOwner: a thread's namespace is reachable from
// that thread only, a named namespace is the calling user's own unless
// shared by the configuration.
func TestNamespacesBelongToTheirOwner(t *testing.T) {
	s, err := Open("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tool := &Tool{Store: s, Policy: tools.Fixed(tools.Config{SharedNamespaces: []string{"team"}})}
	call := func(user, thread string, p KeyValue) *KeyValueResult {
		t.Helper()
		resp, err := tool.Handle(context.Background(), &p, xmlpipe.Metadata{From: "agent", ThreadID: thread, User: user})
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*xmlpipe.RespondResponse).Payload.(*KeyValueResult)
	}
	const ta, tb = "aaaaaaaa-0000-4000-8000-000000000001", "bbbbbbbb-0000-4000-8000-000000000002"
	if r := call("alice", ta, KeyValue{Op: "set", Key: "k", Value: "alice's"}); r.Error != "" {
		t.Fatal(r.Error)
	}
	for _, ns := range []string{"thread:" + ta, "thread:" + tb, "thread:", "thread:x"} {
		for _, op := range []KeyValue{{Op: "get", Key: "k", Namespace: ns}, {Op: "set", Key: "k", Value: "bob's", Namespace: ns},
			{Op: "delete", Key: "k", Namespace: ns}} {
			if r := call("bob", tb, op); r.Error != ErrThreadNS.Error() || r.Found || r.Value != "" {
				t.Errorf("bob %s in %s: %+v", op.Op, ns, r)
			}
		}
	}
	if r := call("alice", ta, KeyValue{Op: "get", Key: "k"}); r.Value != "alice's" {
		t.Fatalf("alice's value: %+v", r)
	}
	// Named namespaces: per user; "team" is shared.
	call("alice", ta, KeyValue{Op: "set", Key: "k", Value: "alice notes", Namespace: "notes"})
	call("alice", ta, KeyValue{Op: "set", Key: "k", Value: "for the team", Namespace: "team"})
	for _, tc := range []struct {
		user, ns, want string
	}{
		{"alice", "notes", "alice notes"},
		{"bob", "notes", ""},
		{"", "notes", ""}, // the organism's own traffic is nobody's user
		{"alice:5", "notes", ""},
		{"bob", "team", "for the team"},
		{"", "team", "for the team"},
	} {
		if r := call(tc.user, tb, KeyValue{Op: "get", Key: "k", Namespace: tc.ns}); r.Value != tc.want || r.Found != (tc.want != "") {
			t.Errorf("user %q, namespace %q: %+v, want %q", tc.user, tc.ns, r, tc.want)
		}
	}
	if r := call("bob", tb, KeyValue{Op: "set", Key: "k", Value: "bob notes", Namespace: "notes"}); r.Error != "" {
		t.Fatal(r.Error)
	}
	if r := call("alice", ta, KeyValue{Op: "get", Key: "k", Namespace: "notes"}); r.Value != "alice notes" {
		t.Fatalf("bob overwrote alice's namespace: %+v", r)
	}
	if r := call("bob", tb, KeyValue{Op: "get", Key: "k", Namespace: strings.Repeat("n", 257)}); !strings.Contains(r.Error, "at most 256") {
		t.Fatalf("long namespace: %+v", r)
	}
	// Stored names cannot be confused: user "a" with namespace "b:c" is not
	// user "a:b" with namespace "c".
	n1, _ := Namespace(tools.Config{}, "b:c", xmlpipe.Metadata{User: "a"})
	n2, _ := Namespace(tools.Config{}, "c", xmlpipe.Metadata{User: "a:b"})
	if n1 == n2 {
		t.Fatalf("%q == %q", n1, n2)
	}
}

// TestMigration: a version-0 tools.db (named namespaces stored as given,
// shared by everyone) is moved into the organism's own space on open.
func TestMigration(t *testing.T) {
	dir := t.TempDir()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "tools.db"))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE TABLE kv (namespace TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, expires_at INTEGER, PRIMARY KEY (namespace, key))`,
		`INSERT INTO kv VALUES ('thread:t1', 'k', 'thread value', NULL), ('team', 'k', 'old team', NULL),
			('user:5:alice:notes', 'k', 'forged', NULL), ('user:0::team', 'k', 'raw', NULL)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second open finds version 1 and changes nothing
		s, err := Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		for _, tc := range []struct{ user, thread, ns, want string }{
			{"", "t1", "", "thread value"},
			{"", "x", "team", "old team"},
			{"bob", "x", "team", ""},
			{"alice", "x", "notes", ""},
			{"", "x", "user:0::team", "raw"},
		} {
			ns, err := Namespace(tools.Config{}, tc.ns, xmlpipe.Metadata{User: tc.user, ThreadID: tc.thread})
			if err != nil {
				t.Fatal(err)
			}
			if v, _, err := s.Get(ctx, ns, "k"); err != nil || v != tc.want {
				t.Errorf("%+v: %q %v", tc, v, err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		shared []string
		ok     bool
	}{
		{nil, true}, {[]string{"team", "ops"}, true}, {[]string{""}, false}, {[]string{"thread:x"}, false},
		{[]string{strings.Repeat("n", 257)}, false},
	} {
		if err := Check(tools.Config{SharedNamespaces: tc.shared}); (err == nil) != tc.ok {
			t.Errorf("%q: %v", tc.shared, err)
		}
	}
}

// TestDefaultNamespaceIsTheConversations: without <Namespace>, a key set
// in one call is found by the next call of the same conversation, though
// each call travels on a thread of its own (an agent's tool calls do), and
// not by another conversation; a caller cannot name a conversation's
// namespace.
func TestDefaultNamespaceIsTheConversations(t *testing.T) {
	s, err := Open("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tool := &Tool{Store: s, Policy: tools.Fixed(tools.Config{})}
	call := func(conv, thread string, p KeyValue) *KeyValueResult {
		t.Helper()
		md := xmlpipe.Metadata{From: "agent", ThreadID: thread, Conversation: conv}
		resp, err := tool.Handle(context.Background(), &p, md)
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*xmlpipe.RespondResponse).Payload.(*KeyValueResult)
	}
	if r := call("c1", "hop1", KeyValue{Op: "set", Key: "k", Value: "v"}); r.Error != "" {
		t.Fatalf("set: %+v", r)
	}
	if r := call("c1", "hop2", KeyValue{Op: "get", Key: "k"}); !r.Found || r.Value != "v" {
		t.Errorf("the next call of the conversation: %+v, want v found", r)
	}
	if r := call("c2", "hop3", KeyValue{Op: "get", Key: "k"}); r.Found {
		t.Errorf("another conversation sees it: %+v", r)
	}
	for _, ns := range []string{"conversation:c1", "thread:hop1"} {
		if r := call("c2", "hop4", KeyValue{Op: "get", Key: "k", Namespace: ns}); r.Found || r.Error == "" {
			t.Errorf("namespace %q named by another conversation: %+v, want refused", ns, r)
		}
	}
}
