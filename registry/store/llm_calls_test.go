package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestCalls: calls are recorded with increasing ids (continuing after a
// reopen), linked once to an envelope's seq, and read newest last, per
// conversation or thread.
func TestCalls(t *testing.T) {
	s, dir := openTest(t, Options{})
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	one := CallRow{Time: at, Conversation: "conv-a", Thread: "conv-a", Agent: "poet", Backend: "local", Model: "m1",
		Attempt: 1, PromptTokens: 11, CompletionTokens: 7, Wait: time.Millisecond, FirstToken: 20 * time.Millisecond,
		Duration: 90 * time.Millisecond, Streamed: true, FinishReason: "stop", ToolCalls: 2}
	id1, err := s.AppendCall(one)
	must(t, err)
	two := CallRow{Time: at.Add(time.Second), Conversation: "conv-a", Thread: "child-b", Agent: "critic",
		Backend: "local", Model: "m1", Attempt: 2, Duration: time.Second, Error: "HTTP 503"}
	id2, err := s.AppendCall(two)
	must(t, err)
	three := CallRow{Time: at.Add(2 * time.Second), Conversation: "conv-c", Thread: "conv-c", Agent: "poet",
		Backend: "cloud"}
	id3, err := s.AppendCall(three)
	must(t, err)
	if id1 != 1 || id2 != 2 || id3 != 3 {
		t.Fatalf("ids %d %d %d", id1, id2, id3)
	}
	must(t, s.LinkCalls([]int64{id1, id2}, 42))
	must(t, s.LinkCalls([]int64{id1}, 43)) // already linked: kept
	if _, err := s.AppendCall(CallRow{Time: at}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a call without a backend: %v", err)
	}
	must(t, s.Flush(context.Background()))

	one.ID, one.EnvelopeSeq = 1, 42
	two.ID, two.EnvelopeSeq = 2, 42
	three.ID = 3
	for _, tc := range []struct {
		name string
		f    CallFilter
		want []CallRow
	}{
		{"all", CallFilter{}, []CallRow{one, two, three}},
		{"newest two", CallFilter{Limit: 2}, []CallRow{two, three}},
		{"conversation", CallFilter{Thread: "conv-a"}, []CallRow{one, two}},
		{"thread", CallFilter{Thread: "child-b"}, []CallRow{two}},
		{"none", CallFilter{Thread: "nothing"}, nil},
	} {
		got, err := s.Calls(tc.f)
		must(t, err)
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, d)
		}
	}
	must(t, s.Close())

	s, err = Open(dir, Options{})
	must(t, err)
	defer s.Close()
	if id, err := s.AppendCall(three); err != nil || id != 4 {
		t.Errorf("after a reopen: id %d, %v; want 4", id, err)
	}
	r, err := OpenReadOnly(dir)
	must(t, err)
	defer r.Close()
	if got, err := r.Calls(CallFilter{Thread: "conv-a"}); err != nil || len(got) != 2 {
		t.Errorf("read-only: %d calls, %v", len(got), err)
	}
}
