package oob

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestKillThreadWithoutID: a kill-thread whose thread-id is empty or blank
// (`xmlpipe ctl kill-thread thread-id=`, an unset shell variable) is
// INVALID_ARGUMENT saying the id is missing, not NOT_FOUND for a thread
// named by nothing.
func TestKillThreadWithoutID(t *testing.T) {
	f := newFixture(t, nil)
	for _, id := range []string{"", "  "} {
		r := f.do(t, `<kill-thread><thread-id>`+id+`</thread-id></kill-thread>`)
		if r.Payload.Error == nil {
			t.Fatalf("kill-thread %q: %+v, want an error", id, r.Payload)
		}
		got := struct{ Code, Message string }{r.Payload.Error.Code, r.Payload.Error.Message}
		want := struct{ Code, Message string }{CodeInvalidArgument, "thread-id is empty: name a thread of the conversation to kill"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("kill-thread %q (-want +got):\n%s", id, diff)
		}
	}
}
