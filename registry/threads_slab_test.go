package registry

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
)

// modelThread is the reference model's view of one live thread.
type modelThread struct {
	parent string // "" for a root
	path   []string
}

// threadModel is a deliberately naive thread registry (a map of paths) that
// TestThreadsAgainstModel checks the slab-backed one against.
type threadModel map[string]modelThread

// remove deletes id and every descendant, returning how many it removed.
func (m threadModel) remove(id string) int {
	n := 1
	for k, v := range m {
		if v.parent == id {
			n += m.remove(k)
		}
	}
	delete(m, id)
	return n
}

// ancestors returns id, its parent, …, its root.
func (m threadModel) ancestors(id string) []string {
	var out []string
	for ; id != ""; id = m[id].parent {
		out = append(out, id)
	}
	return out
}

// TestThreadsAgainstModel drives the registry with a long random sequence of
// Begin, Extend, Prune and End (slots and interned names are freed and
// reused many times over) and compares every result, the whole registry and
// a lineage after each step with the naive model.
func TestThreadsAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	th := newTestThreads(newFakeClock(), nil)
	model := threadModel{}
	var live []string // ids in model, for random picks
	pick := func() string { return live[rng.IntN(len(live))] }
	names := func(prefix string) string { return fmt.Sprintf("%s.%d", prefix, rng.IntN(7)) }
	for step := range 5000 {
		switch op := rng.IntN(10); {
		case op < 2 || len(live) == 0:
			id, from, target := uuid.NewString(), names("client"), ""
			if rng.IntN(3) > 0 {
				target = names("listener")
			}
			if err := th.Begin(id, from, target); err != nil {
				t.Fatalf("step %d: Begin: %v", step, err)
			}
			path := []string{testOrganism, from}
			if target != "" {
				path = append(path, target)
			}
			model[id] = modelThread{path: path}
		case op < 6:
			id, to := pick(), names("listener")
			child, err := th.Extend(id, to)
			if err != nil {
				t.Fatalf("step %d: Extend(%s): %v", step, id, err)
			}
			model[child] = modelThread{parent: id, path: append(slices.Clone(model[id].path), to)}
		case op < 8:
			id := pick()
			caller, reply, err := th.Prune(id)
			m := model[id]
			switch {
			case len(m.path) < 2:
				if err == nil {
					t.Fatalf("step %d: Prune(%s) of a one-segment path: no error", step, id)
				}
			case m.parent != "":
				if err != nil || caller != model[m.parent].path[len(m.path)-2] || reply != m.parent {
					t.Fatalf("step %d: Prune(%s) = %q, %s, %v; want %q, %s", step, id, caller, reply, err,
						model[m.parent].path[len(m.path)-2], m.parent)
				}
			default:
				if err != nil || caller != m.path[len(m.path)-2] || reply != id {
					t.Fatalf("step %d: Prune(%s) of a root = %q, %s, %v; want %q, itself", step, id, caller, reply, err,
						m.path[len(m.path)-2])
				}
			}
			model.remove(id)
		default:
			id := pick()
			if err := th.End(id); err != nil {
				t.Fatalf("step %d: End(%s): %v", step, id, err)
			}
			model.remove(id)
		}
		live = live[:0]
		want := make(map[string][]string, len(model))
		for id, m := range model {
			live = append(live, id)
			want[id] = m.path
		}
		slices.Sort(live) // map order is random; keep the run reproducible
		if diff := cmp.Diff(want, th.DebugDump()); diff != "" {
			t.Fatalf("step %d: registry differs from the model (-model +registry):\n%s", step, diff)
		}
		if len(live) > 0 {
			id := pick()
			if diff := cmp.Diff(model.ancestors(id), th.Ancestors(id)); diff != "" {
				t.Fatalf("step %d: Ancestors(%s) (-model +registry):\n%s", step, id, diff)
			}
		}
	}
}

// TestThreadsForgetEndedNames checks that ending every thread frees every
// slot and forgets every interned name: external senders come and go, and a
// registry that kept each name forever would grow without bound.
func TestThreadsForgetEndedNames(t *testing.T) {
	th := newTestThreads(newFakeClock(), nil)
	var roots []string
	used := map[*threadShard]bool{}
	for i := range 500 {
		root := mustBegin(t, th, fmt.Sprintf("client-%d", i), "greeter")
		mustExtend(t, th, mustExtend(t, th, root, fmt.Sprintf("tool-%d", i)), "shouter")
		roots = append(roots, root)
		used[th.home(uuid.MustParse(root))] = true
	}
	// Each shard in use interns the organism, "greeter" and "shouter" once;
	// every conversation adds its client and its tool.
	if n, want := internedNames(th), 3*len(used)+500+500; n != want {
		t.Fatalf("%d interned names, want %d", n, want)
	}
	for _, root := range roots {
		if err := th.End(root); err != nil {
			t.Fatal(err)
		}
	}
	if th.Len() != 0 || internedNames(th) != 0 {
		t.Fatalf("after ending everything: %d threads, %d interned names; want none", th.Len(), internedNames(th))
	}
	for i := range th.shards {
		s := &th.shards[i]
		if used, free := max(s.slab.next, 1)-1, uint64(len(s.slab.free)); used != free {
			t.Fatalf("shard %d: %d slots handed out, %d free; want all free", i, used, free)
		}
	}
	root := mustBegin(t, th, "client-0", "greeter")
	if got, want := th.DebugDump()[root], []string{testOrganism, "client-0", "greeter"}; !slices.Equal(got, want) {
		t.Fatalf("path after reuse = %q, want %q", got, want)
	}
}

// internedNames counts the names interned by every shard of th.
func internedNames(th *Threads) int {
	n := 0
	for i := range th.shards {
		n += len(th.shards[i].segs.ids)
	}
	return n
}
