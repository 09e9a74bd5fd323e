package registry

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/google/uuid"
)

// TestThreadsMemory100k holds 100 000 live threads (20 000 conversations of
// five nodes, 1 000 distinct senders) and asserts the heap grew by less than
// 200 MB (DESIGN.md §9).
func TestThreadsMemory100k(t *testing.T) {
	const conversations, limit = 20_000, 200 << 20
	roots := make([]string, conversations)
	for i := range roots {
		roots[i] = uuid.NewString()
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)

	th := NewThreads(ThreadsConfig{Organism: "hello-world"})
	for i, root := range roots {
		if err := th.Begin(root, fmt.Sprintf("client-%d", i%1000), "greeter"); err != nil {
			t.Fatal(err)
		}
		shouter := mustExtend(t, th, root, "shouter")
		mustExtend(t, th, shouter, "response-handler")
		calc := mustExtend(t, th, root, "calculator.add")
		mustExtend(t, th, calc, "system.todo")
	}

	runtime.GC()
	runtime.ReadMemStats(&after)
	if n := th.Len(); n != 5*conversations {
		t.Fatalf("Len = %d, want %d", n, 5*conversations)
	}
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("100k live threads: heap grew %.1f MB (%d bytes/thread)", float64(grown)/(1<<20), grown/int64(th.Len()))
	if grown >= limit {
		t.Errorf("heap grew %d bytes for %d threads, want < %d", grown, th.Len(), limit)
	}
	runtime.KeepAlive(th)
}
