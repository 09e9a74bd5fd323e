package registry

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/google/uuid"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

const tid = "550e8400-e29b-41d4-a716-446655440000" // conftest.py sample_thread_id

type shoutedResponse struct{ Message string }

// recordingTodoSink records TodoSink calls in order.
type recordingTodoSink struct {
	mu     sync.Mutex
	events []string
}

func (s *recordingTodoSink) WatcherPut(w Watcher) {
	s.mu.Lock()
	defer s.mu.Unlock()
	state := "pending"
	if w.Raised {
		state = "raised"
	}
	s.events = append(s.events, "put "+w.WaitFor+" "+state)
}

func (s *recordingTodoSink) WatcherClosed(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, "closed "+id)
}

func newTestTodo(t *testing.T) *TodoRegistry {
	t.Helper()
	return NewTodoRegistry(TodoConfig{Clock: newFakeClock().Now})
}

// Ports of tests/test_todo_registry.py::TestTodoRegistry.

func TestTodoRegisterCreatesWatcher(t *testing.T) {
	r := newTestTodo(t)
	id := r.Register(tid, "greeter", "ShoutedResponse", "shouter", "waiting for shout")
	got, ok := r.Get(id)
	if !ok {
		t.Fatalf("Get(%s) found nothing", id)
	}
	want := &Watcher{
		ID: id, ThreadID: tid, Issuer: "greeter", WaitFor: "shoutedresponse", FromListener: "shouter",
		Description: "waiting for shout", Created: newFakeClock().Now(),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("watcher (-want +got):\n%s", diff)
	}
	if n := len(r.PendingFor(tid, "greeter")); n != 1 || r.Len() != 1 {
		t.Errorf("PendingFor = %d, Len = %d, want 1 and 1", n, r.Len())
	}
	if u, err := uuid.Parse(id); err != nil || u.Version() != 7 || u.String() != id {
		t.Errorf("watcher id %q is not a lower-case UUID v7 (%v)", id, err)
	}
	// Ids sort in creation order: a durable organism's watcher rows, keyed
	// by id, are written side by side.
	prev := id
	for range 100 {
		next := r.Register(tid, "greeter", "ShoutedResponse", "shouter", "again")
		if next <= prev {
			t.Fatalf("watcher id %q registered after %q sorts before it", next, prev)
		}
		prev = next
	}
}

func TestTodoCheck(t *testing.T) {
	payload := &shoutedResponse{Message: "HELLO!"}
	tests := []struct {
		name        string
		waitFor     string
		from        string // watcher's from_listener
		thread      string // thread the payload arrives on
		payloadType string
		sender      string
		wantRaised  bool
	}{
		{name: "raises eyebrow on match", waitFor: "ShoutedResponse", from: "shouter", thread: tid, payloadType: "ShoutedResponse", sender: "shouter", wantRaised: true},
		{name: "respects from_listener filter", waitFor: "ShoutedResponse", from: "shouter", thread: tid, payloadType: "ShoutedResponse", sender: "other-agent"},
		{name: "no from_listener accepts anyone", waitFor: "ShoutedResponse", thread: tid, payloadType: "ShoutedResponse", sender: "other-agent", wantRaised: true},
		{name: "ignores non-matching payload", waitFor: "ShoutedResponse", from: "shouter", thread: tid, payloadType: "Greeting", sender: "shouter"},
		{name: "ignores different thread", waitFor: "ShoutedResponse", from: "shouter", thread: uuid.NewString(), payloadType: "ShoutedResponse", sender: "shouter"},
		{name: "payload type is case-insensitive", waitFor: "shoutedresponse", thread: tid, payloadType: "SHOUTEDRESPONSE", sender: "shouter", wantRaised: true},
		{name: "from_listener is case-insensitive", waitFor: "ShoutedResponse", from: "Shouter", thread: tid, payloadType: "ShoutedResponse", sender: "SHOUTER", wantRaised: true},
		// Q22 fix: exact match, no substring either way.
		{name: "Q22 substring of the type does not match", waitFor: "Response", thread: tid, payloadType: "ShoutedResponse", sender: "shouter"},
		{name: "Q22 type containing wait_for does not match", waitFor: "ShoutedResponse", thread: tid, payloadType: "ShoutedResponseV2", sender: "shouter"},
		{name: "Q22 empty wait_for matches nothing", waitFor: "", thread: tid, payloadType: "ShoutedResponse", sender: "shouter"},
		{name: "from_listener is not a substring match", waitFor: "ShoutedResponse", from: "shout", thread: tid, payloadType: "ShoutedResponse", sender: "shouter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newTestTodo(t)
			id := r.Register(tid, "greeter", tt.waitFor, tt.from, "")
			got := r.Check(tt.thread, tt.payloadType, tt.sender, payload)
			if !tt.wantRaised {
				if len(got) != 0 {
					t.Errorf("Check raised %v, want none", got)
				}
				return
			}
			if len(got) != 1 || got[0].ID != id || !got[0].Raised || got[0].TriggeredFrom != tt.sender || got[0].TriggeredBy != any(payload) {
				t.Fatalf("Check = %+v, want watcher %s raised by %q with the payload", got, id, tt.sender)
			}
			if w, _ := r.Get(id); !w.Raised {
				t.Error("the stored watcher is not raised")
			}
		})
	}
}

func TestTodoRaisedAndPendingFor(t *testing.T) {
	r := newTestTodo(t)
	shout := r.Register(tid, "greeter", "ShoutedResponse", "", "")
	other := r.Register(tid, "greeter", "OtherResponse", "", "")
	r.Register(tid, "shouter", "ShoutedResponse", "", "")
	r.Check(tid, "ShoutedResponse", "shouter", nil)

	ids := func(ws []*Watcher) []string {
		var out []string
		for _, w := range ws {
			out = append(out, w.ID)
		}
		return out
	}
	raised := r.RaisedFor(tid, "Greeter") // issuer is case-insensitive
	if diff := cmp.Diff([]string{shout}, ids(raised)); diff != "" {
		t.Errorf("RaisedFor (-want +got):\n%s", diff)
	}
	if raised[0].WaitFor != "shoutedresponse" {
		t.Errorf("WaitFor = %q, want shoutedresponse", raised[0].WaitFor)
	}
	if diff := cmp.Diff([]string{other}, ids(r.PendingFor(tid, "greeter"))); diff != "" {
		t.Errorf("PendingFor (-want +got):\n%s", diff)
	}
	if got := r.RaisedFor(uuid.NewString(), "greeter"); len(got) != 0 {
		t.Errorf("RaisedFor another thread = %v, want none", got)
	}
}

func TestTodoClose(t *testing.T) {
	r := newTestTodo(t)
	id := r.Register(tid, "greeter", "ShoutedResponse", "shouter", "")
	r.Check(tid, "ShoutedResponse", "shouter", nil)
	// handle_todo_complete reads was_raised before closing.
	if w, ok := r.Get(id); !ok || !w.Raised {
		t.Fatalf("Get before Close = %+v, %v; want a raised watcher", w, ok)
	}
	if !r.Close(id) {
		t.Fatal("Close = false, want true")
	}
	if _, ok := r.Get(id); ok || r.Len() != 0 || len(r.PendingFor(tid, "greeter"))+len(r.RaisedFor(tid, "greeter")) != 0 {
		t.Error("watcher still present after Close")
	}
	if r.Close(id) || r.Close("nonexistent-id") {
		t.Error("Close of an unknown id = true, want false")
	}
}

func TestTodoMultipleWatchersSameThread(t *testing.T) {
	r := newTestTodo(t)
	r.Register(tid, "agent1", "ResponseA", "", "")
	b1 := r.Register(tid, "agent2", "ResponseB", "", "")
	b2 := r.Register(tid, "agent1", "ResponseB", "", "")
	got := r.Check(tid, "ResponseB", "x", nil)
	var ids []string
	for _, w := range got {
		ids = append(ids, w.ID)
	}
	if diff := cmp.Diff([]string{b1, b2}, ids); diff != "" {
		t.Errorf("raised (-want +got):\n%s", diff)
	}
}

func TestTodoWatcherOnlyRaisedOnce(t *testing.T) {
	r := newTestTodo(t)
	r.Register(tid, "greeter", "ShoutedResponse", "", "")
	if got := r.Check(tid, "ShoutedResponse", "shouter", nil); len(got) != 1 {
		t.Fatalf("first Check raised %d, want 1", len(got))
	}
	if got := r.Check(tid, "ShoutedResponse", "shouter", nil); len(got) != 0 {
		t.Errorf("second Check raised %d, want 0", len(got))
	}
}

func TestTodoCloseAllForThread(t *testing.T) {
	r := newTestTodo(t)
	r.Register(tid, "greeter", "A", "", "")
	r.Register(tid, "greeter", "B", "", "")
	keep := r.Register(uuid.NewString(), "greeter", "A", "", "")
	if n := r.CloseAllForThread(tid); n != 2 {
		t.Errorf("CloseAllForThread = %d, want 2", n)
	}
	if r.Len() != 1 {
		t.Errorf("Len = %d, want 1", r.Len())
	}
	if _, ok := r.Get(keep); !ok {
		t.Error("a watcher on another thread was closed")
	}
	if n := r.CloseAllForThread(tid); n != 0 {
		t.Errorf("second CloseAllForThread = %d, want 0", n)
	}
}

func TestFormatNudge(t *testing.T) {
	if got := FormatNudge(nil); got != "" {
		t.Errorf("FormatNudge(nil) = %q, want empty", got)
	}
	ws := []*Watcher{
		{ID: "0b6e7c9e-0d1f-4a7e-9b35-3c3f3d9b8a11", WaitFor: "shoutedresponse", Description: "waiting for shout", TriggeredFrom: "shouter"},
		{ID: "7a1d2f4c-5e6b-4c8d-a9e0-1f2a3b4c5d6e", WaitFor: "calculatorresult", TriggeredFrom: "calculator.add"},
	}
	got := FormatNudge(ws)
	golden := filepath.Join("testdata", "nudge.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("FormatNudge (-golden +got):\n%s", diff)
	}
	for _, part := range []string{"SYSTEM NOTE", "shoutedresponse", "waiting for shout", ws[0].ID, "TodoComplete"} {
		if !strings.Contains(got, part) {
			t.Errorf("nudge lacks %q", part)
		}
	}
}

// TestTodoLineage is the Q21 fix: a watcher registered on thread T sees
// payloads on every thread descended from T — the hello-world flow, where
// ShoutedResponse reaches response-handler on a grandchild of greeter's
// thread — but not on its ancestors or on siblings.
func TestTodoLineage(t *testing.T) {
	th := newTestThreads(newFakeClock(), nil)
	t1 := mustBegin(t, th, "console", "greeter")
	t2 := mustExtend(t, th, t1, "shouter")
	t3 := mustExtend(t, th, t2, "response-handler")
	sibling := mustExtend(t, th, t1, "calculator.add")
	other := mustBegin(t, th, "console", "greeter")

	tests := []struct {
		name       string
		watchOn    string
		arrivesOn  string
		wantRaised bool
	}{
		{name: "own thread", watchOn: t1, arrivesOn: t1, wantRaised: true},
		{name: "child thread", watchOn: t1, arrivesOn: t2, wantRaised: true},
		{name: "grandchild thread (hello-world)", watchOn: t1, arrivesOn: t3, wantRaised: true},
		{name: "not the parent", watchOn: t2, arrivesOn: t1},
		{name: "not a sibling branch", watchOn: t2, arrivesOn: sibling},
		{name: "not another conversation", watchOn: t1, arrivesOn: other},
		{name: "unknown thread matches only itself", watchOn: tid, arrivesOn: tid, wantRaised: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewTodoRegistry(TodoConfig{Lineage: th})
			id := r.Register(tt.watchOn, "greeter", "ShoutedResponse", "shouter", "")
			got := r.Check(tt.arrivesOn, "ShoutedResponse", "shouter", nil)
			if raised := len(got) == 1 && got[0].ID == id; raised != tt.wantRaised {
				t.Errorf("raised = %v (%v), want %v", raised, got, tt.wantRaised)
			}
		})
	}
}

func TestTodoLineageFunc(t *testing.T) {
	r := NewTodoRegistry(TodoConfig{Lineage: LineageFunc(func(id string) []string { return []string{id, "parent"} })})
	r.Register("parent", "greeter", "X", "", "")
	if got := r.Check("child", "X", "y", nil); len(got) != 1 {
		t.Errorf("Check through LineageFunc raised %d, want 1", len(got))
	}
}

// TestTodoThreadsEnded: a thread that ends (here by .respond()) closes its
// watchers and those of its sub-threads; the caller's watchers stay.
func TestTodoThreadsEnded(t *testing.T) {
	th := newTestThreads(newFakeClock(), nil)
	r := NewTodoRegistry(TodoConfig{Lineage: th})
	th.OnEnd(r.ThreadsEnded)
	root := mustBegin(t, th, "console", "router")
	greeter := mustExtend(t, th, root, "greeter")
	calc := mustExtend(t, th, greeter, "calculator")
	keep := r.Register(root, "router", "GreetingResponse", "", "")
	r.Register(greeter, "greeter", "CalcResult", "", "")
	r.Register(calc, "calculator", "Anything", "", "")
	if _, _, err := th.Prune(greeter); err != nil {
		t.Fatal(err)
	}
	if r.Len() != 1 {
		t.Errorf("Len = %d after greeter responded, want 1", r.Len())
	}
	if _, ok := r.Get(keep); !ok {
		t.Error("the caller's watcher was closed")
	}
}

func TestTodoSink(t *testing.T) {
	sink := &recordingTodoSink{}
	r := NewTodoRegistry(TodoConfig{Sink: sink})
	a := r.Register(tid, "greeter", "A", "", "")
	b := r.Register(tid, "greeter", "B", "", "")
	c := r.Register("t2", "greeter", "C", "", "")
	r.Check(tid, "A", "x", nil)
	r.Close(a)
	r.ThreadsEnded([]string{tid})
	d := r.Register("t3", "greeter", "D", "", "")
	r.Clear()
	want := []string{
		"put a pending", "put b pending", "put c pending", "put a raised",
		"closed " + a, "closed " + b, "put d pending",
		"closed " + c, "closed " + d, // Clear: any order
	}
	byClear := cmpopts.SortSlices(func(x, y string) bool { return x < y })
	if diff := cmp.Diff(want[:7], sink.events[:min(7, len(sink.events))]); diff != "" {
		t.Errorf("sink events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want[7:], sink.events[min(7, len(sink.events)):], byClear); diff != "" {
		t.Errorf("sink events from Clear (-want +got):\n%s", diff)
	}
	if r.Len() != 0 {
		t.Errorf("Len = %d after Clear, want 0", r.Len())
	}
}

func TestTodoReturnsCopies(t *testing.T) {
	r := newTestTodo(t)
	id := r.Register(tid, "greeter", "A", "", "")
	w, _ := r.Get(id)
	w.Raised, w.WaitFor = true, "b"
	if got := r.Check(tid, "A", "x", nil); len(got) != 1 {
		t.Fatal("mutating a returned watcher changed the registry")
	}
	got := r.RaisedFor(tid, "greeter")
	got[0].Issuer = "mallory"
	if again := r.RaisedFor(tid, "greeter"); len(again) != 1 {
		t.Error("mutating a returned watcher changed the registry")
	}
}

func TestTodoRestore(t *testing.T) {
	clk := newFakeClock()
	r := NewTodoRegistry(TodoConfig{Clock: clk.Now})
	pending := r.Register(tid, "greeter", "ShoutedResponse", "Shouter", "note")
	raised := r.Register(tid, "greeter", "Other", "", "")
	r.Check(tid, "Other", "someone", "payload")
	var rows []Watcher
	for _, id := range []string{pending, raised} {
		w, _ := r.Get(id)
		w.TriggeredBy = nil // not persisted
		rows = append(rows, *w)
	}

	restored := NewTodoRegistry(TodoConfig{})
	if err := restored.Restore(rows); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	for _, row := range rows {
		got, ok := restored.Get(row.ID)
		if !ok {
			t.Fatalf("watcher %s not restored", row.ID)
		}
		if diff := cmp.Diff(&row, got); diff != "" {
			t.Errorf("restored watcher (-want +got):\n%s", diff)
		}
	}
	if got := restored.Check(tid, "ShoutedResponse", "shouter", nil); len(got) != 1 || got[0].ID != pending {
		t.Errorf("Check on restored watchers = %v, want %s raised", got, pending)
	}

	for _, tc := range []struct {
		name string
		ws   []Watcher
	}{
		{name: "no id", ws: []Watcher{{ThreadID: tid}}},
		{name: "no thread", ws: []Watcher{{ID: "x"}}},
		{name: "duplicate in input", ws: []Watcher{{ID: "x", ThreadID: tid}, {ID: "x", ThreadID: tid}}},
		{name: "already open", ws: []Watcher{{ID: pending, ThreadID: tid}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := restored.Len()
			if err := restored.Restore(tc.ws); !errors.Is(err, ErrInvalidWatcher) {
				t.Errorf("Restore error = %v, want ErrInvalidWatcher", err)
			}
			if restored.Len() != before {
				t.Error("a failed Restore changed the registry")
			}
		})
	}
}

// TestTodoConcurrent registers, checks and closes watchers while threads end
// under them.
func TestTodoConcurrent(t *testing.T) {
	th := NewThreads(ThreadsConfig{TTL: time.Minute})
	r := NewTodoRegistry(TodoConfig{Lineage: th})
	th.OnEnd(r.ThreadsEnded)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				root := uuid.NewString()
				if err := th.Begin(root, "console", "greeter"); err != nil {
					t.Error(err)
					return
				}
				id := r.Register(root, "greeter", "ShoutedResponse", "", "")
				child, err := th.Extend(root, "shouter")
				if err != nil {
					t.Error(err)
					return
				}
				r.Check(child, "ShoutedResponse", "shouter", nil)
				FormatNudge(r.RaisedFor(root, "greeter"))
				r.Close(id)
				r.Register(child, "shouter", "X", "", "")
				if err := th.End(root); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if r.Len() != 0 {
		t.Errorf("Len = %d after every thread ended, want 0", r.Len())
	}
}
