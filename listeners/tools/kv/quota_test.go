package kv

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/listeners/tools"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestNamespaceQuota: a namespace holds at most max_keys live keys and
// max_total_bytes of keys and values together; a set past either is
// refused as the result's error, the store unchanged, while overwriting a
// key within them is allowed and deleting one makes room. Each namespace
// has its own; expired keys count for none.
func TestNamespaceQuota(t *testing.T) {
	for _, dir := range []string{"", t.TempDir()} {
		clk := &clock{t: time.Unix(1_700_000_000, 0)}
		s, err := Open(dir, clk.now)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		tool := &Tool{Store: s, Policy: tools.Fixed(tools.Config{MaxKeys: 3, MaxTotalBytes: 40})}
		call := func(p KeyValue) string {
			t.Helper()
			resp, err := tool.Handle(context.Background(), &p, xmlpipe.Metadata{From: "agent", ThreadID: "t1"})
			if err != nil {
				t.Fatal(err)
			}
			return resp.(*xmlpipe.RespondResponse).Payload.(*KeyValueResult).Error
		}
		const keysFull = "key_value: the namespace is full: it holds 3 keys (max_keys 3): delete one first"
		bytesFull := func(n, max int) string {
			return "key_value: the namespace is full: its keys and values would take " + strconv.Itoa(n) +
				" bytes (max_total_bytes " + strconv.Itoa(max) + "): delete or shorten one first"
		}
		steps := []struct {
			p       KeyValue
			wantErr string
		}{
			{KeyValue{Op: "set", Key: "k1", Value: "0123456789"}, ""}, // 12 bytes
			{KeyValue{Op: "set", Key: "k2", Value: "v"}, ""},          // 15
			{KeyValue{Op: "set", Key: "k3", Value: "v", TTLSeconds: 60}, ""},
			{KeyValue{Op: "set", Key: "k4", Value: "v"}, keysFull},
			{KeyValue{Op: "set", Key: "k4", Value: "v", Namespace: "mine"}, ""}, // another namespace
			{KeyValue{Op: "set", Key: "k2", Value: "overwritten"}, ""},          // 12+13+3 = 28
			{KeyValue{Op: "set", Key: "k2", Value: strings.Repeat("x", 24)}, bytesFull(12+26+3, 40)},
			{KeyValue{Op: "set", Key: "k2", Value: strings.Repeat("x", 23)}, ""}, // exactly 40
			{KeyValue{Op: "delete", Key: "k1"}, ""},
			{KeyValue{Op: "set", Key: "k4", Value: "v"}, ""},
		}
		for i, st := range steps {
			if diff := cmp.Diff(st.wantErr, call(st.p)); diff != "" {
				t.Fatalf("dir %q: step %d (%s %s): error (-want +got):\n%s", dir, i+1, st.p.Op, st.p.Key, diff)
			}
		}
		if v, ok, err := s.Get(context.Background(), ThreadPrefix+"t1", "k2"); err != nil || !ok || len(v) != 23 {
			t.Fatalf("k2 = %q, %v, %v", v, ok, err)
		}
		// A namespace already past its caps (they were lowered) refuses new
		// keys and growth, but takes an overwrite that does not grow it.
		tool.Policy = tools.Fixed(tools.Config{MaxKeys: 1, MaxTotalBytes: 10})
		if err := call(KeyValue{Op: "set", Key: "k2", Value: "short"}); err != "" {
			t.Fatalf("shrinking k2 past the caps: %s", err)
		}
		if err := call(KeyValue{Op: "set", Key: "k2", Value: "longer"}); err != bytesFull(3+3+8, 10) {
			t.Fatalf("growing k2 past the caps: %q", err)
		}
		tool.Policy = tools.Fixed(tools.Config{MaxKeys: 3, MaxTotalBytes: 40})
		// Expired keys make room.
		clk.advance(2 * time.Minute)
		if err := call(KeyValue{Op: "set", Key: "k5", Value: "v"}); err != "" {
			t.Fatalf("set after k3 expired: %s", err)
		}
	}
}

// TestNamespaceQuotaRace: concurrent sets of new keys cannot pass
// max_keys together.
func TestNamespaceQuotaRace(t *testing.T) {
	s, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tool := &Tool{Store: s, Policy: tools.Fixed(tools.Config{MaxKeys: 10})}
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			p := KeyValue{Op: "set", Key: "k" + strconv.Itoa(i), Value: "v", Namespace: "ns"}
			if _, err := tool.Handle(context.Background(), &p, xmlpipe.Metadata{From: "agent"}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	var n int
	if err := s.db.QueryRow(`SELECT count(*) FROM kv`).Scan(&n); err != nil || n != 10 {
		t.Fatalf("%d keys stored (%v), want 10", n, err)
	}
}
