package registry

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/google/uuid"
)

const testOrganism = "hello-world"

func newTestThreads(clk *fakeClock, sink ThreadSink) *Threads {
	cfg := ThreadsConfig{Organism: testOrganism, TTL: 10 * time.Minute, Clock: clk.Now, Logger: slog.New(slog.DiscardHandler)}
	if sink != nil {
		cfg.Sink = sink
	}
	return NewThreads(cfg)
}

func mustBegin(t *testing.T, th *Threads, from, target string) string {
	t.Helper()
	id := uuid.NewString()
	if err := th.Begin(id, from, target); err != nil {
		t.Fatalf("Begin(%s, %q, %q): %v", id, from, target, err)
	}
	return id
}

func mustExtend(t *testing.T, th *Threads, id, to string) string {
	t.Helper()
	child, err := th.Extend(id, to)
	if err != nil {
		t.Fatalf("Extend(%s, %q): %v", id, to, err)
	}
	return child
}

func TestThreadsConfig(t *testing.T) {
	tests := []struct {
		name    string
		cfg     ThreadsConfig
		wantOrg string
		wantTTL time.Duration
		wantErr bool
	}{
		{name: "zero takes defaults", wantOrg: DefaultOrganism, wantTTL: DefaultThreadTTL},
		{name: "explicit kept", cfg: ThreadsConfig{Organism: "o", TTL: time.Second}, wantOrg: "o", wantTTL: time.Second},
		{name: "negative ttl", cfg: ThreadsConfig{TTL: -time.Second}, wantOrg: DefaultOrganism, wantTTL: -time.Second, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.cfg.Validate(); (err != nil) != tt.wantErr {
				t.Errorf("Validate() = %v, want error %v", err, tt.wantErr)
			}
			d := tt.cfg.WithDefaults()
			if d.Organism != tt.wantOrg || d.TTL != tt.wantTTL || d.Clock == nil || d.Logger == nil {
				t.Errorf("WithDefaults() = %+v, want organism %q ttl %v and a clock and logger", d, tt.wantOrg, tt.wantTTL)
			}
		})
	}
}

func TestBegin(t *testing.T) {
	tests := []struct {
		name     string
		from, to string
		wantPath []string
	}{
		{name: "conversation", from: "console", to: "greeter", wantPath: []string{testOrganism, "console", "greeter"}},
		{name: "broadcast origin", from: "console", to: "", wantPath: []string{testOrganism, "console"}},
		{name: "dotted names stay whole", from: "calculator.add", to: "system.todo", wantPath: []string{testOrganism, "calculator.add", "system.todo"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			th := newTestThreads(newFakeClock(), nil)
			id := mustBegin(t, th, tt.from, tt.to)
			if diff := cmp.Diff(tt.wantPath, th.DebugDump()[id]); diff != "" {
				t.Errorf("path (-want +got):\n%s", diff)
			}
			if got := th.Depth(id); got != len(tt.wantPath) {
				t.Errorf("Depth = %d, want %d", got, len(tt.wantPath))
			}
			if got := th.Root(id); got != id {
				t.Errorf("Root = %q, want the id itself", got)
			}
		})
	}
}

func TestBeginKnownIDOnlyTouches(t *testing.T) {
	clk := newFakeClock()
	sink := newRecordingThreadSink()
	th := newTestThreads(clk, sink)
	id := mustBegin(t, th, "console", "greeter")
	clk.Advance(time.Minute)
	if err := th.Begin(id, "someone-else", "shouter"); err != nil {
		t.Fatalf("Begin(known): %v", err)
	}
	if diff := cmp.Diff([]string{testOrganism, "console", "greeter"}, th.DebugDump()[id]); diff != "" {
		t.Errorf("path changed (-want +got):\n%s", diff)
	}
	recs := th.Records()
	if len(recs) != 1 || !recs[0].Touched.Equal(clk.Now()) || recs[0].Created.Equal(clk.Now()) {
		t.Errorf("Records = %+v, want one node created earlier and touched now (%v)", recs, clk.Now())
	}
	if len(sink.created) != 1 {
		t.Errorf("sink saw %d creations, want 1", len(sink.created))
	}
}

// TestJoin: an external message on a live thread touches it and is told its
// conversation root; on an unknown id it starts a conversation.
func TestJoin(t *testing.T) {
	clk := newFakeClock()
	sink := newRecordingThreadSink()
	th := newTestThreads(clk, sink)
	fresh := uuid.NewString()
	root, created, err := th.Join(fresh, "console", "greeter")
	if err != nil || !created || root != fresh {
		t.Fatalf("Join(new) = (%s, %v, %v), want (%s, true, nil)", root, created, err, fresh)
	}
	child := mustExtend(t, th, fresh, "shouter")
	clk.Advance(time.Minute)
	root, created, err = th.Join(child, "someone-else", "x")
	if err != nil || created || root != fresh {
		t.Fatalf("Join(live child) = (%s, %v, %v), want (%s, false, nil)", root, created, err, fresh)
	}
	if got := th.Depth(child); got != 4 {
		t.Errorf("Join changed the live thread's path: depth %d, want 4", got)
	}
	for _, rec := range th.Records() {
		if rec.ID == child && !rec.Touched.Equal(clk.Now()) {
			t.Errorf("Join did not touch %s: touched %v, want %v", child, rec.Touched, clk.Now())
		}
	}
	if len(sink.created) != 2 {
		t.Errorf("sink saw %d creations, want 2", len(sink.created))
	}
	if _, _, err := th.Join("not-a-uuid", "console", "greeter"); !errors.Is(err, ErrInvalidThreadID) {
		t.Errorf("Join(bad id) error = %v, want ErrInvalidThreadID", err)
	}
	if _, _, err := th.Join(uuid.NewString(), "", "greeter"); !errors.Is(err, ErrEmptySegment) {
		t.Errorf("Join(no sender) error = %v, want ErrEmptySegment", err)
	}
}

func TestBeginRejects(t *testing.T) {
	tests := []struct {
		name, id, from string
		want           error
	}{
		{name: "empty id", id: "", from: "console", want: ErrInvalidThreadID},
		{name: "not a uuid", id: "not-a-uuid", from: "console", want: ErrInvalidThreadID},
		{name: "upper case", id: "6F1C0E2A-3B4D-4E5F-8A6B-7C8D9E0F1A2B", from: "console", want: ErrInvalidThreadID},
		{name: "version 1", id: "6f1c0e2a-3b4d-1e5f-8a6b-7c8d9e0f1a2b", from: "console", want: ErrInvalidThreadID},
		{name: "braced", id: "{6f1c0e2a-3b4d-4e5f-8a6b-7c8d9e0f1a2b}", from: "console", want: ErrInvalidThreadID},
		{name: "urn form", id: "urn:uuid:6f1c0e2a-3b4d-4e5f-8a6b-7c8d9e0f1a2b", from: "console", want: ErrInvalidThreadID},
		{name: "empty sender", id: "6f1c0e2a-3b4d-4e5f-8a6b-7c8d9e0f1a2b", from: "", want: ErrEmptySegment},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			th := newTestThreads(newFakeClock(), nil)
			if err := th.Begin(tt.id, tt.from, "greeter"); !errors.Is(err, tt.want) {
				t.Errorf("Begin(%q, %q) = %v, want %v", tt.id, tt.from, err, tt.want)
			}
			if th.Len() != 0 {
				t.Errorf("Len = %d after a rejected Begin, want 0", th.Len())
			}
		})
	}
}

func TestExtend(t *testing.T) {
	th := newTestThreads(newFakeClock(), nil)
	root := mustBegin(t, th, "console", "greeter")
	shouter := mustExtend(t, th, root, "shouter")

	if !ValidThreadID(shouter) || shouter == root {
		t.Fatalf("Extend gave %q, want a fresh lower-case v4 id", shouter)
	}
	// A second forward to the same hop gets its own thread: two requests in
	// flight must not share one (the first reply would end the other's).
	again := mustExtend(t, th, root, "shouter")
	if again == shouter {
		t.Errorf("Extend same hop reused the live child %s, want a fresh id", shouter)
	}
	other := mustExtend(t, th, root, "calculator.add")
	if other == shouter {
		t.Errorf("different hops share id %s", other)
	}
	want := map[string][]string{
		root:    {testOrganism, "console", "greeter"},
		shouter: {testOrganism, "console", "greeter", "shouter"},
		again:   {testOrganism, "console", "greeter", "shouter"},
		other:   {testOrganism, "console", "greeter", "calculator.add"},
	}
	if diff := cmp.Diff(want, th.DebugDump()); diff != "" {
		t.Errorf("DebugDump (-want +got):\n%s", diff)
	}
	if err := th.End(shouter); err != nil {
		t.Fatal(err)
	}
	if fresh := mustExtend(t, th, root, "shouter"); fresh == shouter {
		t.Errorf("Extend after the child ended reused %s, want a fresh id", fresh)
	}

	for _, tc := range []struct {
		name, id, to string
		want         error
	}{
		{name: "unknown id", id: uuid.NewString(), to: "x", want: ErrUnknownThread},
		{name: "malformed id", id: "nope", to: "x", want: ErrUnknownThread},
		{name: "empty hop", id: root, to: "", want: ErrEmptySegment},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := th.Extend(tc.id, tc.to); !errors.Is(err, tc.want) {
				t.Errorf("Extend(%q, %q) error = %v, want %v", tc.id, tc.to, err, tc.want)
			}
		})
	}
}

// TestPruneSequence: .respond() walks back up the chain to each caller in
// turn; the last respond goes to the external caller on the root id.
func TestPruneSequence(t *testing.T) {
	th := newTestThreads(newFakeClock(), nil)
	root := mustBegin(t, th, "console", "router")
	greeter := mustExtend(t, th, root, "greeter")
	calc := mustExtend(t, th, greeter, "calculator")

	steps := []struct {
		prune      string
		wantCaller string
		wantReply  string
		wantLive   []string
	}{
		{prune: calc, wantCaller: "greeter", wantReply: greeter, wantLive: []string{root, greeter}},
		{prune: greeter, wantCaller: "router", wantReply: root, wantLive: []string{root}},
		{prune: root, wantCaller: "console", wantReply: root, wantLive: []string{}},
	}
	for i, s := range steps {
		caller, reply, err := th.Prune(s.prune)
		if err != nil {
			t.Fatalf("step %d: Prune: %v", i, err)
		}
		if caller != s.wantCaller || reply != s.wantReply {
			t.Errorf("step %d: Prune = (%q, %s), want (%q, %s)", i, caller, reply, s.wantCaller, s.wantReply)
		}
		live := slices.Sorted(maps.Keys(th.DebugDump()))
		if diff := cmp.Diff(slices.Sorted(slices.Values(s.wantLive)), live, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("step %d: live threads (-want +got):\n%s", i, diff)
		}
	}
	if _, _, err := th.Prune(root); !errors.Is(err, ErrUnknownThread) {
		t.Errorf("Prune(ended root) error = %v, want ErrUnknownThread", err)
	}
}

// TestPruneEndsSubThreads: when greeter responds, the calculator and
// summarizer branches it spawned end with it (seed 001, "Sub-threads are
// terminated"); the caller's thread lives on.
func TestPruneEndsSubThreads(t *testing.T) {
	sink := newRecordingThreadSink()
	th := newTestThreads(newFakeClock(), sink)
	var ended []string
	th.OnEnd(func(ids []string) { ended = append(ended, ids...) })

	root := mustBegin(t, th, "console", "router")
	greeter := mustExtend(t, th, root, "greeter")
	calc := mustExtend(t, th, greeter, "calculator")
	summ := mustExtend(t, th, greeter, "summarizer")
	deep := mustExtend(t, th, calc, "calculator.add")

	caller, reply, err := th.Prune(greeter)
	if err != nil || caller != "router" || reply != root {
		t.Fatalf("Prune(greeter) = (%q, %s, %v), want (router, %s, nil)", caller, reply, err, root)
	}
	want := slices.Sorted(slices.Values([]string{greeter, calc, summ, deep}))
	if diff := cmp.Diff(want, slices.Sorted(slices.Values(ended))); diff != "" {
		t.Errorf("OnEnd ids (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, slices.Sorted(slices.Values(sink.endedIDs()))); diff != "" {
		t.Errorf("sink ended ids (-want +got):\n%s", diff)
	}
	for _, id := range want {
		if th.Known(id) {
			t.Errorf("%s still known after its ancestor responded", id)
		}
	}
	if !th.Known(root) || th.Len() != 1 {
		t.Errorf("want only the root alive, have %d threads", th.Len())
	}
	if diff := cmp.Diff([]string{root}, sink.liveIDs()); diff != "" {
		t.Errorf("sink live ids (-want +got):\n%s", diff)
	}
}

func TestPruneRejects(t *testing.T) {
	th := newTestThreads(newFakeClock(), nil)
	solo := uuid.NewString()
	if err := th.Restore([]ThreadRecord{{ID: solo, Path: []string{"solo"}}}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, id string
		want     error
	}{
		{name: "unknown", id: uuid.NewString(), want: ErrUnknownThread},
		{name: "malformed", id: "x", want: ErrUnknownThread},
		{name: "one segment", id: solo, want: ErrChainExhausted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			caller, reply, err := th.Prune(tt.id)
			if !errors.Is(err, tt.want) || caller != "" || reply != "" {
				t.Errorf("Prune(%q) = (%q, %q, %v), want error %v", tt.id, caller, reply, err, tt.want)
			}
		})
	}
	if th.Known(solo) {
		t.Error("an exhausted chain must end")
	}
}

// TestDottedNames is the Q10 fix: names containing dots are whole segments.
func TestDottedNames(t *testing.T) {
	th := NewThreads(ThreadsConfig{Organism: "org.example"})
	root := mustBegin(t, th, "console.remote", "calculator.add")
	todo := mustExtend(t, th, root, "system.todo")
	caller, reply, err := th.Prune(todo)
	if err != nil || caller != "calculator.add" || reply != root {
		t.Errorf("Prune = (%q, %s, %v), want (calculator.add, %s, nil)", caller, reply, err, root)
	}
	caller, _, err = th.Prune(root)
	if err != nil || caller != "console.remote" {
		t.Errorf("Prune(root) = (%q, %v), want console.remote", caller, err)
	}
}

// TestConversationsNeverShareUUID is the Q9 fix: identical paths in two
// conversations, or in a conversation repeated after the first ended, never
// share a thread id.
func TestConversationsNeverShareUUID(t *testing.T) {
	th := newTestThreads(newFakeClock(), nil)
	seen := map[string]string{}
	note := func(id, what string) {
		t.Helper()
		if prev, dup := seen[id]; dup {
			t.Fatalf("%s reuses %s's id %s", what, prev, id)
		}
		seen[id] = what
	}
	for round := range 3 {
		var roots []string
		for conv := range 4 {
			root := mustBegin(t, th, "console", "greeter")
			shouter := mustExtend(t, th, root, "shouter")
			handler := mustExtend(t, th, shouter, "response-handler")
			for _, id := range []string{root, shouter, handler} {
				note(id, fmt.Sprintf("round %d conversation %d", round, conv))
			}
			roots = append(roots, root)
		}
		for _, r := range roots {
			if err := th.End(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	if th.Len() != 0 {
		t.Errorf("Len = %d after every conversation ended, want 0", th.Len())
	}
}

func TestEndCascade(t *testing.T) {
	tests := []struct {
		name     string
		end      func(ids map[string]string) string
		wantLive []string
	}{
		{name: "leaf", end: func(m map[string]string) string { return m["c"] }, wantLive: []string{"root", "b", "s"}},
		{name: "middle ends its subtree", end: func(m map[string]string) string { return m["b"] }, wantLive: []string{"root", "s"}},
		{name: "root ends the conversation", end: func(m map[string]string) string { return m["root"] }, wantLive: []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sink := newRecordingThreadSink()
			th := newTestThreads(newFakeClock(), sink)
			ids := map[string]string{"root": mustBegin(t, th, "console", "a")}
			ids["b"] = mustExtend(t, th, ids["root"], "b")
			ids["c"] = mustExtend(t, th, ids["b"], "c")
			ids["s"] = mustExtend(t, th, ids["root"], "s")
			if err := th.End(tt.end(ids)); err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, name := range tt.wantLive {
				want = append(want, ids[name])
			}
			slices.Sort(want)
			got := slices.Sorted(maps.Keys(th.DebugDump()))
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("live (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(got, sink.liveIDs(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("sink disagrees with registry (-registry +sink):\n%s", diff)
			}
			if err := th.End(tt.end(ids)); !errors.Is(err, ErrUnknownThread) {
				t.Errorf("second End error = %v, want ErrUnknownThread", err)
			}
		})
	}
}

func TestLineage(t *testing.T) {
	th := newTestThreads(newFakeClock(), nil)
	root := mustBegin(t, th, "console", "greeter")
	a := mustExtend(t, th, root, "shouter")
	b := mustExtend(t, th, a, "response-handler")
	unknown := uuid.NewString()
	tests := []struct {
		id            string
		wantAncestors []string
		wantRoot      string
		wantDepth     int
	}{
		{id: root, wantAncestors: []string{root}, wantRoot: root, wantDepth: 3},
		{id: a, wantAncestors: []string{a, root}, wantRoot: root, wantDepth: 4},
		{id: b, wantAncestors: []string{b, a, root}, wantRoot: root, wantDepth: 5},
		{id: unknown, wantAncestors: nil, wantRoot: "", wantDepth: 0},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.wantAncestors, th.Ancestors(tt.id)); diff != "" {
			t.Errorf("Ancestors(%s) (-want +got):\n%s", tt.id, diff)
		}
		if got := th.Root(tt.id); got != tt.wantRoot {
			t.Errorf("Root(%s) = %q, want %q", tt.id, got, tt.wantRoot)
		}
		if got := th.Depth(tt.id); got != tt.wantDepth {
			t.Errorf("Depth(%s) = %d, want %d", tt.id, got, tt.wantDepth)
		}
	}
}

func TestCollect(t *testing.T) {
	clk := newFakeClock()
	sink := newRecordingThreadSink()
	th := newTestThreads(clk, sink) // TTL 10 minutes
	var onEnd []string
	th.OnEnd(func(ids []string) { onEnd = append(onEnd, ids...) })

	busyRoot := mustBegin(t, th, "console", "a")
	busyMid := mustExtend(t, th, busyRoot, "b")
	busyLeaf := mustExtend(t, th, busyMid, "c")
	idleSide := mustExtend(t, th, busyRoot, "side")
	idleSideKid := mustExtend(t, th, idleSide, "kid")
	idleRoot := mustBegin(t, th, "console", "x")
	idleKid := mustExtend(t, th, idleRoot, "y")

	clk.Advance(5 * time.Minute)
	th.Touch(busyLeaf)
	clk.Advance(6 * time.Minute) // everything but busyLeaf idle for 11 minutes

	steps := []struct {
		name      string
		advance   time.Duration
		wantCount int
		wantGone  []string
		wantLive  []string
	}{
		{
			name:      "busy leaf keeps its ancestors, idle branches go",
			wantCount: 4,
			wantGone:  []string{idleSide, idleSideKid, idleRoot, idleKid},
			wantLive:  []string{busyRoot, busyMid, busyLeaf},
		},
		{name: "not yet idle long enough", advance: 3 * time.Minute, wantCount: 0, wantLive: []string{busyRoot, busyMid, busyLeaf}},
		{name: "everything idle", advance: time.Minute, wantCount: 3, wantGone: []string{busyRoot, busyMid, busyLeaf}},
		{name: "nothing left", wantCount: 0},
	}
	for _, s := range steps {
		clk.Advance(s.advance)
		onEnd = nil
		if got := th.Collect(); got != s.wantCount {
			t.Errorf("%s: Collect = %d, want %d", s.name, got, s.wantCount)
		}
		if diff := cmp.Diff(slices.Sorted(slices.Values(s.wantGone)), slices.Sorted(slices.Values(onEnd)), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: ended (-want +got):\n%s", s.name, diff)
		}
		for _, id := range s.wantLive {
			if !th.Known(id) {
				t.Errorf("%s: %s collected, want alive", s.name, id)
			}
		}
		if th.Len() != len(s.wantLive) {
			t.Errorf("%s: Len = %d, want %d", s.name, th.Len(), len(s.wantLive))
		}
	}
	if p := sink.issues(); len(p) != 0 || len(sink.liveIDs()) != 0 {
		t.Errorf("sink problems %v, live %v", p, sink.liveIDs())
	}
}

func TestRestoreRoundTrip(t *testing.T) {
	clk := newFakeClock()
	th := newTestThreads(clk, nil)
	root := mustBegin(t, th, "console", "greeter")
	clk.Advance(time.Second)
	shouter := mustExtend(t, th, root, "shouter")
	clk.Advance(time.Second)
	mustExtend(t, th, shouter, "response-handler")
	mustExtend(t, th, root, "calculator.add")
	mustBegin(t, th, "console", "")
	recs := th.Records()

	// Another process starts an hour later and gets the rows in any order.
	clk.Advance(time.Hour)
	shuffled := slices.Clone(recs)
	slices.Reverse(shuffled)
	sink := newRecordingThreadSink()
	restored := newTestThreads(clk, sink)
	if err := restored.Restore(shuffled); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if diff := cmp.Diff(th.DebugDump(), restored.DebugDump()); diff != "" {
		t.Errorf("DebugDump after restore (-want +got):\n%s", diff)
	}
	got := restored.Records() // the last activity as persisted: a restart is idleness too
	if diff := cmp.Diff(recs, got); diff != "" {
		t.Errorf("Records after restore (-want +got):\n%s", diff)
	}
	if len(sink.created) != 0 || len(sink.ended) != 0 {
		t.Errorf("Restore told the sink %d creations and %d ends, want none", len(sink.created), len(sink.ended))
	}
	// The tree works as before: a restored parent extends, a restored child
	// prunes to its caller.
	next := mustExtend(t, restored, root, "shouter")
	if next == shouter || !restored.Known(next) || restored.Depth(next) != restored.Depth(shouter) {
		t.Errorf("Extend on a restored parent = %s (depth %d), want a fresh sibling of %s (depth %d)",
			next, restored.Depth(next), shouter, restored.Depth(shouter))
	}
	if caller, reply, err := restored.Prune(shouter); err != nil || caller != "greeter" || reply != root {
		t.Errorf("Prune(restored) = (%q, %s, %v), want (greeter, %s, nil)", caller, reply, err, root)
	}
}

func TestRestoreDropsOrphans(t *testing.T) {
	ids := make([]string, 6)
	for i := range ids {
		ids[i] = uuid.NewString()
	}
	recs := []ThreadRecord{
		{ID: ids[0], Path: []string{"o", "console", "a"}},
		{ID: ids[1], Parent: ids[0], Path: []string{"o", "console", "a", "b"}},
		{ID: ids[2], Parent: uuid.NewString(), Path: []string{"o", "x", "y", "z"}}, // parent gone
		{ID: ids[3], Parent: ids[2], Path: []string{"o", "x", "y", "z", "w"}},      // under an orphan
		{ID: ids[4], Parent: ids[5], Path: []string{"o", "p", "q"}},                // a cycle
		{ID: ids[5], Parent: ids[4], Path: []string{"o", "p"}},
	}
	sink := newRecordingThreadSink()
	var logs bytes.Buffer
	th := NewThreads(ThreadsConfig{Sink: sink, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	var onEnd []string
	th.OnEnd(func(got []string) { onEnd = append(onEnd, got...) })
	if err := th.Restore(recs); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if diff := cmp.Diff(slices.Sorted(slices.Values(ids[:2])), slices.Sorted(maps.Keys(th.DebugDump()))); diff != "" {
		t.Errorf("restored (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(slices.Sorted(slices.Values(ids[2:])), slices.Sorted(slices.Values(onEnd))); diff != "" {
		t.Errorf("orphans reported (-want +got):\n%s", diff)
	}
	if len(sink.ended) != 1 {
		t.Errorf("sink got %d end events, want 1", len(sink.ended))
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "count=4") {
		t.Errorf("want a warning naming 4 dropped records, logged %q", logs.String())
	}
}

func TestRestoreRejects(t *testing.T) {
	live := uuid.NewString()
	p, c := uuid.NewString(), uuid.NewString()
	tests := []struct {
		name string
		recs []ThreadRecord
	}{
		{name: "bad id", recs: []ThreadRecord{{ID: "x", Path: []string{"o", "a"}}}},
		{name: "bad parent id", recs: []ThreadRecord{{ID: c, Parent: "x", Path: []string{"o", "a"}}}},
		{name: "own parent", recs: []ThreadRecord{{ID: c, Parent: c, Path: []string{"o", "a"}}}},
		{name: "duplicate", recs: []ThreadRecord{{ID: c, Path: []string{"o", "a"}}, {ID: c, Path: []string{"o", "b"}}}},
		{name: "empty path", recs: []ThreadRecord{{ID: c}}},
		{name: "empty segment", recs: []ThreadRecord{{ID: c, Path: []string{"o", ""}}}},
		{name: "already live", recs: []ThreadRecord{{ID: live, Path: []string{"o", "a"}}}},
		{name: "child path not parent plus one", recs: []ThreadRecord{
			{ID: p, Path: []string{"o", "a"}}, {ID: c, Parent: p, Path: []string{"o", "z", "b"}}}},
		{name: "child path too long", recs: []ThreadRecord{
			{ID: p, Path: []string{"o", "a"}}, {ID: c, Parent: p, Path: []string{"o", "a", "b", "c"}}}},
		{name: "child of a live node with a wrong path", recs: []ThreadRecord{{ID: c, Parent: live, Path: []string{"o", "b"}}}},
		{name: "root path longer than organism, sender, target", recs: []ThreadRecord{{ID: c, Path: []string{"o", "a", "b", "c"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			th := newTestThreads(newFakeClock(), nil)
			if err := th.Restore([]ThreadRecord{{ID: live, Path: []string{"o", "a"}}}); err != nil {
				t.Fatal(err)
			}
			before := th.DebugDump()
			if err := th.Restore(tt.recs); !errors.Is(err, ErrInvalidRecord) {
				t.Errorf("Restore error = %v, want ErrInvalidRecord", err)
			}
			if diff := cmp.Diff(before, th.DebugDump()); diff != "" {
				t.Errorf("a failed Restore changed the registry (-before +after):\n%s", diff)
			}
		})
	}
}

func TestRestoreUnderLiveNode(t *testing.T) {
	th := newTestThreads(newFakeClock(), nil)
	root := mustBegin(t, th, "console", "a")
	child := uuid.NewString()
	if err := th.Restore([]ThreadRecord{{ID: child, Parent: root, Path: []string{testOrganism, "console", "a", "b"}}}); err != nil {
		t.Fatal(err)
	}
	want := []string{testOrganism, "console", "a", "b"}
	if diff := cmp.Diff(want, th.DebugDump()[child]); diff != "" {
		t.Errorf("restored child's path (-want +got):\n%s", diff)
	}
	if caller, reply, err := th.Prune(child); err != nil || caller != "a" || reply != root {
		t.Errorf("Prune(restored child) = (%q, %s, %v), want (a, %s, nil)", caller, reply, err, root)
	}
}

// TestSinkCallbacksMayCallBack: notifications run outside the lock, so a
// subscriber may query the registry.
func TestSinkCallbacksMayCallBack(t *testing.T) {
	th := newTestThreads(newFakeClock(), nil)
	var seen []bool
	th.OnEnd(func(ids []string) {
		for _, id := range ids {
			seen = append(seen, th.Known(id))
		}
		_ = th.Len()
	})
	root := mustBegin(t, th, "console", "a")
	mustExtend(t, th, root, "b")
	if err := th.End(root); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]bool{false, false}, seen); diff != "" {
		t.Errorf("Known from inside OnEnd (-want +got):\n%s", diff)
	}
}

// TestRestoreSiblingsOnOneHop: two live children for the same hop (two
// requests in flight to one listener, each forward on its own thread) restore,
// and each prunes back to the parent.
func TestRestoreSiblingsOnOneHop(t *testing.T) {
	th := newTestThreads(newFakeClock(), nil)
	root := mustBegin(t, th, "console", "a")
	one, two := mustExtend(t, th, root, "b"), mustExtend(t, th, root, "b")
	restored := newTestThreads(newFakeClock(), nil)
	if err := restored.Restore(th.Records()); err != nil {
		t.Fatalf("Restore siblings on one hop: %v", err)
	}
	for _, id := range []string{one, two} {
		if caller, reply, err := restored.Prune(id); err != nil || caller != "a" || reply != root {
			t.Errorf("Prune(%s) = (%q, %s, %v), want (a, %s, nil)", id, caller, reply, err, root)
		}
	}
}
