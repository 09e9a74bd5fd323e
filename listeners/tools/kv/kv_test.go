package kv

import (
	"context"
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
