package aeiou

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestReplayCacheBounds checks §11.3: per-session capacity with LRU
// eviction, TTL expiry, isolation between sessions, and sessions dropped
// once their entries expired.
func TestReplayCacheBounds(t *testing.T) {
	c := NewReplayCache(5*time.Minute, 3)
	now := testNow
	for _, j := range []string{"a", "b", "c"} {
		if !c.Add("s1", j, now) {
			t.Fatalf("fresh jti %s refused", j)
		}
	}
	if c.Add("s1", "a", now) {
		t.Fatal("replayed jti a accepted")
	}
	// a was just used (the refused replay counts), so b is the LRU.
	if !c.Add("s1", "d", now) {
		t.Fatal("d refused")
	}
	if n, _ := c.Len("s1"); n != 3 {
		t.Fatalf("%d entries, capacity 3", n)
	}
	if c.Seen("s1", "b", now) || !c.Seen("s1", "a", now) || !c.Seen("s1", "c", now) || !c.Seen("s1", "d", now) {
		t.Fatal("LRU evicted the wrong entry")
	}
	// Sessions are separate.
	if !c.Add("s2", "a", now) {
		t.Fatal("jti a of another session refused")
	}
	// TTL: at exactly 5 min an entry is still there, after it is gone.
	if c.Add("s1", "c", now.Add(5*time.Minute)) {
		t.Fatal("jti accepted again at the TTL boundary")
	}
	later := now.Add(5*time.Minute + time.Second)
	if !c.Add("s1", "d", later) {
		t.Fatal("jti refused after its TTL")
	}
	// The sweep drops s2 (all expired) once a TTL has passed.
	c.Add("s3", "x", later.Add(6*time.Minute))
	if _, sessions := c.Len("s3"); sessions != 1 {
		t.Fatalf("%d sessions after the sweep, want 1 (s3)", sessions)
	}
	c.Forget("s3")
	if _, sessions := c.Len("s3"); sessions != 0 {
		t.Fatalf("%d sessions after Forget", sessions)
	}
}

// TestReplayCacheDefaults checks the §11.3 defaults: 4096 per session.
func TestReplayCacheDefaults(t *testing.T) {
	c := NewReplayCache(0, 0)
	if c.ttl != DefaultReplayTTL || c.capacity != DefaultReplayCapacity {
		t.Fatalf("defaults %v %d", c.ttl, c.capacity)
	}
	for i := range DefaultReplayCapacity + 100 {
		c.Add("s", fmt.Sprint(i), testNow)
	}
	if n, _ := c.Len("s"); n != DefaultReplayCapacity {
		t.Fatalf("%d entries", n)
	}
	if c.Seen("s", "0", testNow) || !c.Seen("s", fmt.Sprint(DefaultReplayCapacity+99), testNow) {
		t.Fatal("eviction order")
	}
}

// TestReplayCacheConcurrent adds the same jtis from many goroutines: each
// is accepted exactly once.
func TestReplayCacheConcurrent(t *testing.T) {
	c := NewReplayCache(0, 0)
	var mu sync.Mutex
	accepted := map[string]int{}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				j := fmt.Sprint(i)
				if c.Add(fmt.Sprint("s", g%2), j, testNow) {
					mu.Lock()
					accepted[fmt.Sprint(g%2, "/", j)]++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if len(accepted) != 400 {
		t.Fatalf("%d distinct accepted, want 400", len(accepted))
	}
	for k, n := range accepted {
		if n != 1 {
			t.Fatalf("%s accepted %d times", k, n)
		}
	}
}
