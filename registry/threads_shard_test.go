package registry

import (
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestConversationStaysInOneShard: every thread Extend creates names its
// root's shard, and is still a valid thread id.
func TestConversationStaysInOneShard(t *testing.T) {
	th := newTestThreads(newFakeClock(), nil)
	for range 4 * threadShards {
		root := mustBegin(t, th, "console", "greeter")
		want := shardOf(uuid.MustParse(root))
		id := root
		for _, hop := range []string{"shouter", "tool", "sink"} {
			id = mustExtend(t, th, id, hop)
			u, err := parseThreadID(id)
			if err != nil {
				t.Fatalf("Extend gave %q: %v", id, err)
			}
			if got := shardOf(u); got != want {
				t.Fatalf("thread %s (under root %s) names shard %d, want %d", id, root, got, want)
			}
		}
	}
	if th.nstrays.Load() != 0 {
		t.Fatalf("%d strays without a restore, want 0", th.nstrays.Load())
	}
}

// strayTree returns records of a root and a chain of two children whose ids
// name other shards than the root's, as threads persisted before the
// registry was sharded do.
func strayTree() (recs []ThreadRecord, root, child, grandchild string) {
	r := inShard(uuid.New(), 1)
	c := inShard(uuid.New(), 2)
	g := inShard(uuid.New(), 5)
	root, child, grandchild = r.String(), c.String(), g.String()
	return []ThreadRecord{
		{ID: grandchild, Parent: child, Path: []string{testOrganism, "console", "greeter", "shouter", "sink"}},
		{ID: child, Parent: root, Path: []string{testOrganism, "console", "greeter", "shouter"}},
		{ID: root, Path: []string{testOrganism, "console", "greeter"}},
	}, root, child, grandchild
}

// TestRestoreStrays: restored threads whose ids name other shards than their
// root's are found by id, extend into their tree's shard, prune to their
// callers, and leave no index entry behind once they end.
func TestRestoreStrays(t *testing.T) {
	th := newTestThreads(newFakeClock(), nil)
	recs, root, child, grandchild := strayTree()
	if err := th.Restore(recs); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if got := th.nstrays.Load(); got != 2 {
		t.Fatalf("%d strays after restore, want 2", got)
	}
	for id, depth := range map[string]int{root: 3, child: 4, grandchild: 5} {
		if !th.Known(id) || th.Depth(id) != depth || th.Root(id) != root {
			t.Errorf("%s: known %v depth %d root %s; want known, depth %d, root %s",
				id, th.Known(id), th.Depth(id), th.Root(id), depth, root)
		}
	}
	// A restored id cannot be restored again, wherever it lives.
	if err := th.Restore(recs[:1]); err == nil {
		t.Error("restoring a live stray again succeeded")
	}
	// Begin on a stray only touches it.
	if err := th.Begin(child, "console", "greeter"); err != nil || th.Depth(child) != 4 {
		t.Errorf("Begin(stray) = %v, depth %d; want nil, 4", err, th.Depth(child))
	}
	// A stray's new child lives with its tree.
	next := mustExtend(t, th, grandchild, "tool")
	if got := shardOf(uuid.MustParse(next)); got != shardOf(uuid.MustParse(root)) {
		t.Errorf("child of a stray names shard %d, want its root's %d", got, shardOf(uuid.MustParse(root)))
	}
	if caller, reply, err := th.Prune(next); err != nil || caller != "sink" || reply != grandchild {
		t.Errorf("Prune(child of stray) = (%q, %s, %v), want (sink, %s, nil)", caller, reply, err, grandchild)
	}
	if caller, reply, err := th.Prune(grandchild); err != nil || caller != "shouter" || reply != child {
		t.Errorf("Prune(stray) = (%q, %s, %v), want (shouter, %s, nil)", caller, reply, err, child)
	}
	if th.Known(grandchild) || th.nstrays.Load() != 1 {
		t.Errorf("after pruning a stray: known %v, %d strays; want gone, 1", th.Known(grandchild), th.nstrays.Load())
	}
	if err := th.End(root); err != nil {
		t.Fatal(err)
	}
	if th.Len() != 0 || th.nstrays.Load() != 0 || len(th.strays) != 0 {
		t.Errorf("after ending the tree: %d threads, %d strays; want none", th.Len(), th.nstrays.Load())
	}
	// An id that was a stray may start a conversation of its own, at home.
	if err := th.Begin(child, "console", "greeter"); err != nil {
		t.Fatal(err)
	}
	if s, r := th.lock(uuid.MustParse(child)); r == 0 || s != th.home(uuid.MustParse(child)) {
		s.mu.Unlock()
		t.Fatalf("a former stray's new conversation is not in its home shard")
	} else {
		s.mu.Unlock()
	}
}

// TestCollectStrays: the TTL sweep removes idle strays and their index
// entries.
func TestCollectStrays(t *testing.T) {
	clk := newFakeClock()
	th := newTestThreads(clk, nil)
	recs, _, _, _ := strayTree()
	if err := th.Restore(recs); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	clk.Advance(DefaultThreadTTL + 1)
	if n := th.Collect(); n != 3 {
		t.Fatalf("Collect removed %d threads, want 3", n)
	}
	if th.Len() != 0 || th.nstrays.Load() != 0 {
		t.Errorf("after Collect: %d threads, %d strays; want none", th.Len(), th.nstrays.Load())
	}
}

// TestOnEndWithoutSink: without a sink, subscribers hear every end from the
// call that caused it, before it returns, and may query the registry.
func TestOnEndWithoutSink(t *testing.T) {
	clk := newFakeClock()
	th := newTestThreads(clk, nil)
	var ended []string
	th.OnEnd(func(ids []string) {
		for _, id := range ids {
			if th.Known(id) {
				t.Errorf("subscriber told of %s while it is still live", id)
			}
		}
		ended = append(ended, ids...)
	})
	root := mustBegin(t, th, "console", "greeter")
	child := mustExtend(t, th, root, "shouter")
	grandchild := mustExtend(t, th, child, "sink")
	if _, _, err := th.Prune(grandchild); err != nil {
		t.Fatal(err)
	}
	if len(ended) != 1 || ended[0] != grandchild {
		t.Fatalf("after Prune: ended %q, want [%s]", ended, grandchild)
	}
	if err := th.End(root); err != nil {
		t.Fatal(err)
	}
	if want := []string{grandchild, root, child}; !slices.Equal(ended, want) {
		t.Fatalf("after End: ended %q, want %q", ended, want)
	}
	idle := mustBegin(t, th, "console", "greeter")
	clk.Advance(time.Hour)
	if n := th.Collect(); n != 1 || ended[len(ended)-1] != idle {
		t.Fatalf("Collect removed %d, last ended %s; want 1, %s", n, ended[len(ended)-1], idle)
	}
}

// TestExtendIDsTimeOrdered: a sub-thread's id begins with the time it was
// created (Unix microseconds modulo 2^32), so ids sort in creation order
// and their first eight hex digits differ, and stays a valid thread id of
// its root's shard with fresh randomness.
func TestExtendIDsTimeOrdered(t *testing.T) {
	clock := newFakeClock()
	th := newTestThreads(clock, nil)
	root := mustBegin(t, th, "console", "greeter")
	seen := map[string]bool{}
	prev := ""
	for range 50 {
		clock.Advance(time.Millisecond)
		id := mustExtend(t, th, root, "shouter")
		u, err := parseThreadID(id)
		if err != nil {
			t.Fatalf("Extend gave %q: %v", id, err)
		}
		if got, want := binary.BigEndian.Uint32(u[:4]), uint32(clock.Now().UnixMicro()); got != want {
			t.Fatalf("id %s carries time %d us, want %d", id, got, want)
		}
		if id <= prev {
			t.Fatalf("id %s created after %s sorts before it", id, prev)
		}
		if seen[id[:8]] || seen[id[9:]] {
			t.Fatalf("id %s repeats the display prefix or the random part of an earlier id", id)
		}
		seen[id[:8]], seen[id[9:]] = true, true
		prev = id
	}
}
