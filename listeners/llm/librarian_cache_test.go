package llm

import (
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestLibrarianSeesTiersChangedBetweenCalls: the librarian keeps a
// conversation's recorded segments between model calls, yet a change made
// by someone else in between — an operator's fold with a summary of their
// own — is what the next call curates with: the folded note carries the
// operator's summary, and the librarian does not record its old one over it.
func TestLibrarianSeesTiersChangedBetweenCalls(t *testing.T) {
	lc := newLongConv(t, "librarian")
	const thread = "tiers"
	long := strings.Repeat("Field notes from a coastal trip: gulls, tide pools, driftwood and fog. ", 40)
	resp := lc.deliver(thread, "console", long, "")
	if s, ok := resp.(*xmlpipe.SendsResponse); ok {
		lc.deliver(thread, "calc", `{"Expression":"6*7","Value":"42"}`, s.Sends[0].Ref)
	}
	for k := 1; k <= 4; k++ {
		lc.turn(thread, k)
	}
	if !lastHas(lc.last, "[s0 folded") {
		t.Fatalf("the long first message is not folded: %v", lc.last)
	}
	const mine = "An operator's summary of the trip."
	if _, err := lc.cb.Fold(thread, 0, mine, "operator"); err != nil {
		t.Fatal(err)
	}
	lc.turn(thread, 5)
	if !lastHas(lc.last, mine) {
		t.Errorf("the next request does not carry the operator's summary: %v", lc.last)
	}
	tc, _ := lc.cb.Thread(thread)
	if s, ok := tc.Segment(0); !ok || s.Summary != mine {
		t.Errorf("recorded summary of s0 = %q, want the operator's %q", s.Summary, mine)
	}
}

// lastHas reports whether a message of msgs contains text.
func lastHas(msgs []Message, text string) bool {
	for _, m := range msgs {
		if strings.Contains(m.Content, text) {
			return true
		}
	}
	return false
}
