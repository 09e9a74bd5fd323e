package federation

import (
	"log/slog"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestAdoptCorruptAnswerReleasesCall: a recorded call whose kept answer
// does not parse (corrupt bytes in the table) fails its adoption with the
// parse error and is released — neither claimed nor waited on, its caller
// thread mapped to nothing — so a later handling may adopt it again
// instead of finding it claimed by one that gave up.
func TestAdoptCorruptAnswerReleasesCall(t *testing.T) {
	g := &gateway{m: &Manager{}, name: "b", log: slog.New(slog.DiscardHandler),
		pending: map[string]*call{}, claimed: map[string]bool{}, byThread: map[string]string{}}
	const id, thread = "call-1", "caller-thread"
	c := &call{}
	_, ok, err := g.adopt(c, thread, nil, []string{id}, [][]byte{[]byte("\x00 not an envelope")})
	if err == nil || !ok {
		t.Fatalf("adopt = ok %v, err %v; want the recorded call found and its answer's parse error", ok, err)
	}
	type state struct {
		Claimed  map[string]bool
		Pending  int
		ByThread map[string]string
	}
	got := state{Claimed: g.claimed, Pending: len(g.pending), ByThread: g.byThread}
	want := state{Claimed: map[string]bool{}, ByThread: map[string]string{}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the call is not released after its answer failed to parse (-want +got):\n%s", diff)
	}
	// A later handling can adopt it (and learns of the bad answer again).
	if _, ok, err := g.adopt(&call{}, thread, nil, []string{id}, [][]byte{[]byte("\x00 not an envelope")}); !ok || err == nil {
		t.Errorf("second adopt = ok %v, err %v; want the call adopted again, with the parse error", ok, err)
	}
}
