package registry

import (
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestPayload and FrozenPayload mirror the helpers of test_context_buffer.py.
type TestPayload struct {
	Message string
	Value   int
}

// FrozenPayload is a second payload type.
type FrozenPayload struct{ Message string }

func newTestBuffer(t *testing.T, cfg ContextConfig) *ContextBuffer {
	t.Helper()
	if cfg.Clock == nil {
		cfg.Clock = newFakeClock().Now
	}
	b, err := NewContextBuffer(cfg)
	if err != nil {
		t.Fatalf("NewContextBuffer: %v", err)
	}
	return b
}

func mustAppend(t *testing.T, b *ContextBuffer, s Slot) Slot {
	t.Helper()
	got, err := b.Append(s)
	if err != nil {
		t.Fatalf("Append(%+v): %v", s, err)
	}
	return got
}

func messages(slots []Slot) []string {
	var out []string
	for _, s := range slots {
		switch p := s.Payload.(type) {
		case *TestPayload:
			out = append(out, p.Message)
		case *FrozenPayload:
			out = append(out, p.Message)
		}
	}
	return out
}

func TestContextConfig(t *testing.T) {
	tests := []struct {
		name    string
		cfg     ContextConfig
		want    ContextConfig
		wantErr bool
	}{
		{name: "zero takes defaults", want: ContextConfig{MaxSlotsPerThread: 10000, MaxThreads: 1000, TTL: 24 * time.Hour,
			NoteTTL: 30 * 24 * time.Hour, MaxNotes: 1000}},
		{name: "explicit kept", cfg: ContextConfig{MaxSlotsPerThread: 3, MaxThreads: 2, TTL: time.Minute, NoteTTL: time.Hour,
			MaxNotes: 5}, want: ContextConfig{MaxSlotsPerThread: 3, MaxThreads: 2, TTL: time.Minute, NoteTTL: time.Hour, MaxNotes: 5}},
		{name: "max notes follow max threads", cfg: ContextConfig{MaxThreads: 5000}, want: ContextConfig{
			MaxSlotsPerThread: 10000, MaxThreads: 5000, TTL: 24 * time.Hour, NoteTTL: 30 * 24 * time.Hour, MaxNotes: 5000}},
		{name: "negative slots", cfg: ContextConfig{MaxSlotsPerThread: -1}, wantErr: true},
		{name: "negative threads", cfg: ContextConfig{MaxThreads: -1}, wantErr: true},
		{name: "negative ttl", cfg: ContextConfig{TTL: -time.Second}, wantErr: true},
		{name: "negative note ttl", cfg: ContextConfig{NoteTTL: -time.Second}, wantErr: true},
		{name: "negative max notes", cfg: ContextConfig{MaxNotes: -1}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if (err != nil) != tt.wantErr {
				t.Fatalf("Validate() = %v, want error %v", err, tt.wantErr)
			}
			if _, nerr := NewContextBuffer(tt.cfg); (nerr != nil) != tt.wantErr {
				t.Errorf("NewContextBuffer error = %v, want error %v", nerr, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			got := tt.cfg.WithDefaults()
			if got.Clock == nil {
				t.Error("WithDefaults left no clock")
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(ContextConfig{}, "Clock")); diff != "" {
				t.Errorf("WithDefaults (-want +got):\n%s", diff)
			}
		})
	}
}

// Ports of TestBufferSlotImmutability: a Slot is a value, so what a reader
// holds cannot change the history; the payload is kept by reference.
func TestSlotImmutability(t *testing.T) {
	b := newTestBuffer(t, ContextConfig{})
	payload := &TestPayload{Message: "test"}
	got := mustAppend(t, b, Slot{ThreadID: "t1", From: "sender", To: "receiver", Payload: payload, Raw: []byte("<TestPayload/>")})

	got.ThreadID, got.From, got.Index, got.Payload = "evil", "mallory", 99, nil // test_slot_is_frozen, test_slot_metadata_is_frozen
	ctx, _ := b.Thread("t1")
	stored, _ := ctx.At(0)
	if stored.ThreadID != "t1" || stored.From != "sender" || stored.Index != 0 || string(stored.Raw) != "<TestPayload/>" {
		t.Errorf("history changed through a returned slot: %+v", stored)
	}
	if stored.Payload != any(payload) { // test_payload_reference_preserved
		t.Error("payload is not the same object")
	}
}

func TestRawIsCopiedOnAppend(t *testing.T) {
	b := newTestBuffer(t, ContextConfig{})
	raw := []byte("<A/>")
	mustAppend(t, b, Slot{ThreadID: "t1", Raw: raw})
	raw[1] = 'B'
	ctx, _ := b.Thread("t1")
	if s, _ := ctx.At(0); string(s.Raw) != "<A/>" {
		t.Errorf("Raw = %q, want the bytes as appended", s.Raw)
	}
}

// TestAppendSharedKeepsRaw: AppendShared stores the caller's bytes as they
// are (no copy), with the same bookkeeping as Append.
func TestAppendSharedKeepsRaw(t *testing.T) {
	b := newTestBuffer(t, ContextConfig{})
	raw := []byte("<A/>")
	mustAppend(t, b, Slot{ThreadID: "t1", Raw: []byte("<Z/>")})
	got, err := b.AppendShared(Slot{ThreadID: "t1", Raw: raw})
	if err != nil {
		t.Fatal(err)
	}
	ctx, _ := b.Thread("t1")
	s, _ := ctx.At(1)
	if got.Index != 1 || s.Index != 1 || got.Time.IsZero() || &s.Raw[0] != &raw[0] {
		t.Errorf("AppendShared stored index %d (returned %d), time %v, own copy %v; want index 1, a time, the caller's bytes",
			s.Index, got.Index, got.Time, &s.Raw[0] != &raw[0])
	}
}

// Ports of TestThreadContext.
func TestThreadContext(t *testing.T) {
	clk := newFakeClock()
	b := newTestBuffer(t, ContextConfig{Clock: clk.Now})
	first := mustAppend(t, b, Slot{ThreadID: "t1", From: "sender", To: "receiver", Payload: &TestPayload{Message: "test"}})
	want := Slot{Index: 0, ThreadID: "t1", From: "sender", To: "receiver", PayloadType: "TestPayload", Payload: &TestPayload{Message: "test"}, Time: clk.Now()}
	if diff := cmp.Diff(want, first); diff != "" { // test_append_creates_slot
		t.Errorf("appended slot (-want +got):\n%s", diff)
	}
	for i, m := range []string{"second", "third"} { // test_append_increments_index
		if s := mustAppend(t, b, Slot{ThreadID: "t1", Payload: &TestPayload{Message: m}}); s.Index != i+1 {
			t.Errorf("Index = %d, want %d", s.Index, i+1)
		}
	}
	ctx, ok := b.Thread("t1")
	if !ok || ctx.Len() != 3 || ctx.ID() != "t1" {
		t.Fatalf("Thread(t1) = %v, %v with %d slots, want 3", ctx, ok, ctx.Len())
	}
	tests := []struct { // test_getitem_returns_slot, with negative indices
		index  int
		want   string
		wantOK bool
	}{
		{0, "test", true}, {1, "second", true}, {2, "third", true},
		{-1, "third", true}, {-3, "test", true}, {3, "", false}, {-4, "", false},
	}
	for _, tt := range tests {
		s, ok := ctx.At(tt.index)
		if ok != tt.wantOK || (ok && s.Payload.(*TestPayload).Message != tt.want) {
			t.Errorf("At(%d) = %+v, %v; want %q, %v", tt.index, s, ok, tt.want, tt.wantOK)
		}
	}
	if diff := cmp.Diff([]string{"test", "second", "third"}, messages(slices.Collect(ctx.All()))); diff != "" { // test_iteration
		t.Errorf("All (-want +got):\n%s", diff)
	}
}

func TestThreadContextIterationSnapshot(t *testing.T) {
	b := newTestBuffer(t, ContextConfig{})
	for _, m := range []string{"a", "b", "c"} {
		mustAppend(t, b, Slot{ThreadID: "t1", Payload: &TestPayload{Message: m}})
	}
	ctx, _ := b.Thread("t1")
	var seen []string
	for s := range ctx.All() {
		seen = append(seen, s.Payload.(*TestPayload).Message)
		mustAppend(t, b, Slot{ThreadID: "t1", Payload: &TestPayload{Message: "during"}})
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, seen); diff != "" {
		t.Errorf("iteration (-want +got):\n%s", diff)
	}
	if ctx.Len() != 6 {
		t.Errorf("Len = %d, want 6", ctx.Len())
	}
}

func TestThreadContextFilters(t *testing.T) {
	b := newTestBuffer(t, ContextConfig{})
	for _, s := range []Slot{
		{From: "alice", Payload: &TestPayload{Message: "1"}},
		{From: "bob", Payload: &FrozenPayload{Message: "2"}},
		{From: "alice", Payload: &TestPayload{Message: "3"}},
		{From: "carol", Payload: FrozenPayload{Message: "4"}},
		{From: "bob", PayloadType: "ShoutedResponse", Payload: &TestPayload{Message: "5"}},
	} {
		s.ThreadID = "t1"
		mustAppend(t, b, s)
	}
	ctx, _ := b.Thread("t1")
	tests := []struct {
		name string
		got  []Slot
		want []int
	}{
		{name: "ByType TestPayload", got: ctx.ByType("TestPayload"), want: []int{0, 2}}, // test_get_by_type
		{name: "ByType FrozenPayload (pointer or value)", got: ctx.ByType("FrozenPayload"), want: []int{1, 3}},
		{name: "ByType explicit root tag", got: ctx.ByType("ShoutedResponse"), want: []int{4}},
		{name: "ByType is exact", got: ctx.ByType("testpayload"), want: nil},
		{name: "From alice", got: ctx.From("alice"), want: []int{0, 2}}, // test_get_from
		{name: "From bob", got: ctx.From("bob"), want: []int{1, 4}},
		{name: "From nobody", got: ctx.From("dave"), want: nil},
	}
	for _, tt := range tests {
		var idx []int
		for _, s := range tt.got {
			idx = append(idx, s.Index)
		}
		if diff := cmp.Diff(tt.want, idx); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestThreadContextSlice(t *testing.T) {
	b := newTestBuffer(t, ContextConfig{})
	for i := range 5 {
		mustAppend(t, b, Slot{ThreadID: "t1", Payload: &TestPayload{Value: i}})
	}
	ctx, _ := b.Thread("t1")
	tests := []struct {
		start, end int
		want       []int
	}{
		{0, math.MaxInt, []int{0, 1, 2, 3, 4}},
		{1, 3, []int{1, 2}},
		{-2, math.MaxInt, []int{3, 4}},
		{0, -1, []int{0, 1, 2, 3}},
		{-100, 2, []int{0, 1}},
		{3, 100, []int{3, 4}},
		{3, 3, nil},
		{4, 1, nil},
		{5, 9, nil},
	}
	for _, tt := range tests {
		var got []int
		for _, s := range ctx.Slice(tt.start, tt.end) {
			got = append(got, s.Index)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Slice(%d, %d) (-want +got):\n%s", tt.start, tt.end, diff)
		}
	}
}

// Ports of TestContextBuffer.
func TestContextBufferThreads(t *testing.T) {
	b := newTestBuffer(t, ContextConfig{})
	if first := b.GetOrCreate("t1"); b.GetOrCreate("t1") != first { // test_get_or_create_thread
		t.Error("GetOrCreate(t1) twice gave different contexts")
	}
	if b.GetOrCreate("t1") == b.GetOrCreate("t2") {
		t.Error("different threads share a context")
	}
	b.Clear()

	mustAppend(t, b, Slot{ThreadID: "t1", Payload: &TestPayload{Message: "a"}}) // test_append_to_thread
	mustAppend(t, b, Slot{ThreadID: "t2", Payload: &TestPayload{Message: "b"}})
	mustAppend(t, b, Slot{ThreadID: "t1", Payload: &TestPayload{Message: "c"}})
	for id, want := range map[string][]string{"t1": {"a", "c"}, "t2": {"b"}} {
		ctx, ok := b.Thread(id)
		if !ok {
			t.Fatalf("thread %s missing", id)
		}
		if diff := cmp.Diff(want, messages(ctx.Slots())); diff != "" {
			t.Errorf("thread %s (-want +got):\n%s", id, diff)
		}
	}
	st := b.Stats() // test_get_stats
	if st.ThreadCount != 2 || st.TotalSlots != 3 || st.MaxThreads != 1000 || st.MaxSlotsPerThread != 10000 {
		t.Errorf("Stats = %+v", st)
	}
	if diff := cmp.Diff([]string{"t1", "t2"}, st.Threads); diff != "" {
		t.Errorf("Stats.Threads (-want +got):\n%s", diff)
	}

	if !b.DeleteThread("t1") || b.ThreadExists("t1") { // test_delete_thread
		t.Error("DeleteThread(t1) did not delete")
	}
	if b.DeleteThread("t1") {
		t.Error("DeleteThread of a missing thread = true")
	}
	b.Clear() // test_clear_resets_state
	if b.ThreadExists("t2") || b.Stats().ThreadCount != 0 || b.Stats().TotalSlots != 0 {
		t.Errorf("after Clear: %+v", b.Stats())
	}
}

func TestThreadIsolation(t *testing.T) {
	b := newTestBuffer(t, ContextConfig{})
	mustAppend(t, b, Slot{ThreadID: "thread-a", Payload: &TestPayload{Message: "secret-a"}})
	mustAppend(t, b, Slot{ThreadID: "thread-b", Payload: &TestPayload{Message: "secret-b"}})
	for id, want := range map[string]string{"thread-a": "secret-a", "thread-b": "secret-b"} {
		ctx, _ := b.Thread(id)
		if diff := cmp.Diff([]string{want}, messages(ctx.Slots())); diff != "" {
			t.Errorf("%s (-want +got):\n%s", id, diff)
		}
	}
}

func TestMaxSlotsLimit(t *testing.T) {
	b := newTestBuffer(t, ContextConfig{MaxSlotsPerThread: 3})
	for range 3 {
		mustAppend(t, b, Slot{ThreadID: "t1"})
	}
	_, err := b.Append(Slot{ThreadID: "t1"})
	if !errors.Is(err, ErrSlotsExceeded) || !strings.Contains(err.Error(), "exceeded max slots") {
		t.Errorf("fourth Append error = %v, want ErrSlotsExceeded", err)
	}
	if ctx, _ := b.Thread("t1"); ctx.Len() != 3 {
		t.Errorf("Len = %d after a refused append, want 3", ctx.Len())
	}
	if _, err := b.Append(Slot{ThreadID: "t2"}); err != nil {
		t.Errorf("another thread is not limited: %v", err)
	}
}

func TestMaxThreadsEvictsOldest(t *testing.T) {
	sink := &recordingSlotSink{}
	b := newTestBuffer(t, ContextConfig{MaxThreads: 2, Sink: sink})
	for _, id := range []string{"t1", "t2", "t1", "t3"} { // t1 is the oldest-created even though used later
		mustAppend(t, b, Slot{ThreadID: id})
	}
	st := b.Stats()
	if st.ThreadCount != 2 || b.ThreadExists("t1") || !b.ThreadExists("t2") || !b.ThreadExists("t3") || st.Evicted != 1 {
		t.Errorf("Stats = %+v, want t2 and t3 with one eviction", st)
	}
	if diff := cmp.Diff([]string{"deleted t1"}, sink.deletions()); diff != "" {
		t.Errorf("sink deletions (-want +got):\n%s", diff)
	}
}

func TestAppendRejectsMissingThread(t *testing.T) {
	b := newTestBuffer(t, ContextConfig{})
	if _, err := b.Append(Slot{From: "x"}); !errors.Is(err, ErrInvalidSlot) {
		t.Errorf("Append without a thread error = %v, want ErrInvalidSlot", err)
	}
}

// Port of TestHandlerMetadataAdapter: a slot keeps everything the handler's
// Metadata is built from (the adapter itself lives with the pump).
func TestSlotKeepsHandlerMetadata(t *testing.T) {
	b := newTestBuffer(t, ContextConfig{})
	in := Slot{
		ThreadID: "t1", From: "sender", To: "test-agent", Payload: &TestPayload{Message: "m"},
		OwnName: "test-agent", IsSelfCall: true, UsageInstructions: "instructions here", TodoNudge: "nudge here",
	}
	mustAppend(t, b, in)
	ctx, _ := b.Thread("t1")
	got, _ := ctx.At(-1)
	if diff := cmp.Diff(in, got, cmpopts.IgnoreFields(Slot{}, "Time", "PayloadType")); diff != "" {
		t.Errorf("slot (-want +got):\n%s", diff)
	}
}

// TestContextFreedWhenThreadEnds: the buffer subscribed to Threads.OnEnd
// drops the history of every thread that ends, sub-threads included.
func TestContextFreedWhenThreadEnds(t *testing.T) {
	th := newTestThreads(newFakeClock(), nil)
	b := newTestBuffer(t, ContextConfig{})
	th.OnEnd(b.ThreadsEnded)
	root := mustBegin(t, th, "console", "greeter")
	shouter := mustExtend(t, th, root, "shouter")
	handler := mustExtend(t, th, shouter, "response-handler")
	for _, id := range []string{root, shouter, handler} {
		mustAppend(t, b, Slot{ThreadID: id})
	}
	if _, _, err := th.Prune(shouter); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{root}, b.Stats().Threads); diff != "" {
		t.Errorf("threads with history (-want +got):\n%s", diff)
	}
}

func TestContextCollect(t *testing.T) {
	clk := newFakeClock()
	b := newTestBuffer(t, ContextConfig{TTL: time.Hour, Clock: clk.Now})
	mustAppend(t, b, Slot{ThreadID: "old"})
	mustAppend(t, b, Slot{ThreadID: "busy"})
	clk.Advance(30 * time.Minute)
	mustAppend(t, b, Slot{ThreadID: "busy"})
	steps := []struct {
		advance time.Duration
		want    int
		left    []string
	}{
		{advance: 29 * time.Minute, want: 0, left: []string{"old", "busy"}},
		{advance: time.Minute, want: 1, left: []string{"busy"}},
		{advance: 30 * time.Minute, want: 1, left: nil},
	}
	for i, s := range steps {
		clk.Advance(s.advance)
		if got := b.Collect(); got != s.want {
			t.Errorf("step %d: Collect = %d, want %d", i, got, s.want)
		}
		if diff := cmp.Diff(s.left, b.Stats().Threads, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("step %d: threads (-want +got):\n%s", i, diff)
		}
	}
}

// recordingSlotSink records SlotSink calls in order.
type recordingSlotSink struct {
	mu     sync.Mutex
	events []string
	slots  []Slot
}

func (s *recordingSlotSink) SlotAppended(sl Slot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, "appended "+sl.ThreadID)
	s.slots = append(s.slots, sl)
}

func (s *recordingSlotSink) ThreadDeleted(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, "deleted "+id)
}

func (s *recordingSlotSink) deletions() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, e := range s.events {
		if strings.HasPrefix(e, "deleted ") {
			out = append(out, e)
		}
	}
	return out
}

func TestContextSink(t *testing.T) {
	sink := &recordingSlotSink{}
	b := newTestBuffer(t, ContextConfig{MaxSlotsPerThread: 2, Sink: sink})
	mustAppend(t, b, Slot{ThreadID: "t1"})
	mustAppend(t, b, Slot{ThreadID: "t1"})
	if _, err := b.Append(Slot{ThreadID: "t1"}); err == nil {
		t.Fatal("third append succeeded")
	}
	mustAppend(t, b, Slot{ThreadID: "t2"})
	b.DeleteThread("t1")
	b.ThreadsEnded([]string{"t2", "never-had-history"})
	want := []string{"appended t1", "appended t1", "appended t2", "deleted t1", "deleted t2"}
	if diff := cmp.Diff(want, sink.events); diff != "" {
		t.Errorf("sink events (-want +got):\n%s", diff)
	}
	if sink.slots[1].Index != 1 {
		t.Errorf("sink got index %d, want the assigned index 1", sink.slots[1].Index)
	}
}

func TestContextRestore(t *testing.T) {
	clk := newFakeClock()
	sink := &recordingSlotSink{}
	b := newTestBuffer(t, ContextConfig{Clock: clk.Now, Sink: sink})
	for _, id := range []string{"t1", "t2", "t1"} {
		mustAppend(t, b, Slot{ThreadID: id, From: "a", To: "b", PayloadType: "X", Raw: []byte("<X/>"), OwnName: "b", IsSelfCall: true})
		clk.Advance(time.Second)
	}
	persisted := slices.Clone(sink.slots)
	slices.Reverse(persisted)

	restored := newTestBuffer(t, ContextConfig{Clock: clk.Now})
	if err := restored.Restore(persisted); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	for _, id := range []string{"t1", "t2"} {
		want, _ := b.Thread(id)
		got, ok := restored.Thread(id)
		if !ok {
			t.Fatalf("thread %s not restored", id)
		}
		if diff := cmp.Diff(want.Slots(), got.Slots()); diff != "" {
			t.Errorf("thread %s (-want +got):\n%s", id, diff)
		}
		if !got.Created().Equal(want.Created()) {
			t.Errorf("thread %s created %v, want %v", id, got.Created(), want.Created())
		}
	}
	if diff := cmp.Diff([]string{"t1", "t2"}, restored.Stats().Threads); diff != "" {
		t.Errorf("creation order (-want +got):\n%s", diff)
	}
	if s := mustAppend(t, restored, Slot{ThreadID: "t1"}); s.Index != 2 {
		t.Errorf("append after restore got index %d, want 2", s.Index)
	}

	tests := []struct {
		name  string
		slots []Slot
	}{
		{name: "gap", slots: []Slot{{ThreadID: "n", Index: 0}, {ThreadID: "n", Index: 2}}},
		{name: "duplicate index", slots: []Slot{{ThreadID: "n", Index: 0}, {ThreadID: "n", Index: 0}}},
		{name: "not from zero", slots: []Slot{{ThreadID: "n", Index: 1}}},
		{name: "no thread", slots: []Slot{{Index: 0}}},
		{name: "thread already has history", slots: []Slot{{ThreadID: "t1", Index: 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := restored.Stats()
			if err := restored.Restore(tt.slots); !errors.Is(err, ErrInvalidSlot) {
				t.Errorf("Restore error = %v, want ErrInvalidSlot", err)
			}
			if diff := cmp.Diff(before, restored.Stats()); diff != "" {
				t.Errorf("a failed Restore changed the buffer (-before +after):\n%s", diff)
			}
		})
	}
}

func TestContextRestoreBeyondMaxThreads(t *testing.T) {
	clk := newFakeClock()
	sink := &recordingSlotSink{}
	b := newTestBuffer(t, ContextConfig{MaxThreads: 2, Clock: clk.Now, Sink: sink})
	base := clk.Now()
	err := b.Restore([]Slot{
		{ThreadID: "newest", Time: base.Add(3 * time.Second)},
		{ThreadID: "oldest", Time: base.Add(time.Second)},
		{ThreadID: "middle", Time: base.Add(2 * time.Second)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"middle", "newest"}, b.Stats().Threads); diff != "" {
		t.Errorf("threads kept (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"deleted oldest"}, sink.deletions()); diff != "" {
		t.Errorf("sink (-want +got):\n%s", diff)
	}
}

func TestContextConcurrent(t *testing.T) {
	b := newTestBuffer(t, ContextConfig{MaxThreads: 8, MaxSlotsPerThread: 50})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				id := string(rune('a' + (w*7+i)%12))
				_, err := b.Append(Slot{ThreadID: id, Payload: &TestPayload{Value: i}})
				if err != nil && !errors.Is(err, ErrSlotsExceeded) {
					t.Error(err)
				}
				if ctx, ok := b.Thread(id); ok {
					ctx.Slice(-3, math.MaxInt)
					ctx.ByType("TestPayload")
					for range ctx.All() {
					}
				}
				if i%50 == 0 {
					b.DeleteThread(id)
					b.Stats()
				}
			}
		}()
	}
	wg.Wait()
	if st := b.Stats(); st.ThreadCount > 8 {
		t.Errorf("ThreadCount = %d beyond MaxThreads 8", st.ThreadCount)
	}
}
