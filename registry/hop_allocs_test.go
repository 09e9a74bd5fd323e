package registry

import (
	"testing"

	"github.com/google/uuid"
)

// hopChain is a conversation as the bus's greeter flow leaves it: root →
// child (forwarded by root's handler) → grandchild (forwarded by child's).
// hopEnv is the kernel registries as a pump wires them.
type hopEnv struct {
	th      *Threads
	todos   *TodoRegistry
	context *ContextBuffer
}

// nopThreadSink is a ThreadSink that keeps nothing.
type nopThreadSink struct{}

func (nopThreadSink) ThreadCreated(ThreadRecord) {}
func (nopThreadSink) ThreadsEnded([]string)      {}

type hopChain struct {
	root, child, grandchild string
}

// newHopChain begins a conversation in th and forwards twice from it.
func newHopChain(t *testing.T, th *Threads) hopChain {
	t.Helper()
	c := hopChain{root: uuid.NewString()}
	if err := th.Begin(c.root, "console", "greeter"); err != nil {
		t.Fatal(err)
	}
	c.child, _ = mustForward(t, th, c.root, "shouter")
	c.grandchild, _ = mustForward(t, th, c.child, "response-handler")
	return c
}

// TestHopAllocations: the registry calls the pump makes on every hop of a
// conversation allocate no more than what they hand out — no thread id
// formatted only to be looked up or compared, no slice only to be walked.
// Each row prepares its operation on many conversations of one registry,
// runs it on some (the registry's own structures grow), then counts the
// allocations of the operation alone on the others.
func TestHopAllocations(t *testing.T) {
	tests := []struct {
		name string
		// prepare builds a conversation in th (todos watching th) and
		// returns the operation to count on it.
		prepare func(t *testing.T, env hopEnv) func()
		// max is the most allocations the operation may make.
		max float64
		// sink gives the thread registry a sink, as a durable organism's.
		sink bool
	}{
		{
			name: "todo check on a descendant of a watched thread, nothing raised",
			prepare: func(t *testing.T, env hopEnv) func() {
				th, todos := env.th, env.todos
				c := newHopChain(t, th)
				todos.Register(c.root, "greeter", "ShoutedResponse", "shouter", "waiting")
				return func() {
					if got := todos.Check(c.grandchild, "GreetingResponse", "greeter", nil); len(got) != 0 {
						t.Errorf("Check raised %d watchers, want none", len(got))
					}
				}
			},
			max: 0,
		},
		{
			name: "todo raise on a descendant of a watched thread: no copies",
			prepare: func(t *testing.T, env hopEnv) func() {
				c := newHopChain(t, env.th)
				env.todos.Register(c.root, "greeter", "ShoutedResponse", "shouter", "waiting")
				return func() {
					if n := env.todos.Raise(c.grandchild, "ShoutedResponse", "shouter", nil); n != 1 {
						t.Errorf("Raise raised %d watchers, want 1", n)
					}
				}
			},
			max: 0,
		},
		{
			name: "root of a conversation root",
			prepare: func(t *testing.T, env hopEnv) func() {
				th := env.th
				c := newHopChain(t, th)
				return func() {
					if got := th.Root(c.root); got != c.root {
						t.Errorf("Root(root) = %q, want %q", got, c.root)
					}
				}
			},
			max: 0,
		},
		{
			name: "end of a leaf: only the ids handed to the subscribers",
			prepare: func(t *testing.T, env hopEnv) func() {
				th := env.th
				c := newHopChain(t, th)
				return func() {
					if err := th.End(c.grandchild); err != nil {
						t.Error(err)
					}
				}
			},
			max: 1,
		},
		{
			// the child's id, formatted once (keep and the subscribers
			// share it), and the slice holding it
			name: "end spent: only the ids handed to the subscribers",
			prepare: func(t *testing.T, env hopEnv) func() {
				th := env.th
				c := newHopChain(t, th)
				if err := th.End(c.grandchild); err != nil {
					t.Fatal(err)
				}
				return func() {
					if n := th.EndSpent(c.root, func(string) bool { return false }); n != 1 {
						t.Errorf("EndSpent ended %d threads, want 1", n)
					}
				}
			},
			max: 2,
		},
		{
			// the pump records one slot on every hop's new thread: the
			// history is one allocation, its list position and first slot
			// included (the map of histories grows rarely)
			name: "context append on a new thread: the history alone",
			prepare: func(t *testing.T, env hopEnv) func() {
				c := newHopChain(t, env.th)
				return func() {
					if _, err := env.context.AppendShared(Slot{ThreadID: c.grandchild, From: "shouter",
						To: "response-handler", PayloadType: "ShoutedResponse"}); err != nil {
						t.Error(err)
					}
				}
			},
			max: 1,
		},
		{
			// a durable organism's sink: the new thread's id (returned
			// too) and path, nothing more to queue the record
			name: "forward with a sink: the child's id and path only",
			sink: true,
			prepare: func(t *testing.T, env hopEnv) func() {
				root := uuid.NewString()
				if err := env.th.Begin(root, "console", "greeter"); err != nil {
					t.Fatal(err)
				}
				return func() {
					if _, _, _, err := env.th.ForwardAs(root, "shouter", "", ""); err != nil {
						t.Error(err)
					}
				}
			},
			max: 2,
		},
		{
			name: "end of a leaf with a sink: only the ids handed over",
			sink: true,
			prepare: func(t *testing.T, env hopEnv) func() {
				c := newHopChain(t, env.th)
				return func() {
					if err := env.th.End(c.grandchild); err != nil {
						t.Error(err)
					}
				}
			},
			max: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := ThreadsConfig{Organism: "hello-world"}
			if tt.sink {
				cfg.Sink = nopThreadSink{}
			}
			th := NewThreads(cfg)
			th.OnEnd(func([]string) {}) // as the pump's todo registry and context buffer do
			todos := NewTodoRegistry(TodoConfig{Lineage: th})
			context, err := NewContextBuffer(ContextConfig{MaxThreads: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			env := hopEnv{th: th, todos: todos, context: context}
			// AllocsPerRun runs the function once more than it counts;
			// the first warm runs grow the registry's structures.
			const warm, runs = 200, 50
			ops := make([]func(), warm+runs+1)
			for i := range ops {
				ops[i] = tt.prepare(t, env)
			}
			for _, op := range ops[:warm] {
				op()
			}
			i := warm
			n := testing.AllocsPerRun(runs, func() {
				ops[i]()
				i++
			})
			if n > tt.max {
				t.Errorf("%v allocations, want at most %v", n, tt.max)
			}
		})
	}
}
