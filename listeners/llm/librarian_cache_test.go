package llm

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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

// TestLibrarianCallSegmentTakesLateAnswer: a tool call's segment, kept
// between model calls, is built again when an answer to the call arrives
// after its result (the call was abandoned): the segment the librarian
// records covers the late answer's slot.
func TestLibrarianCallSegmentTakesLateAnswer(t *testing.T) {
	lc := newLongConv(t, "librarian")
	var calls atomic.Int32
	lc.a.LLM = ChatterFunc(func(_ context.Context, r Request) (Reply, error) {
		if n := calls.Add(1); n > 1 {
			return Reply{Content: fmt.Sprintf("Answer %d.", n)}, nil
		}
		return Reply{ToolCalls: []ToolCall{newToolCall("c1", "calc", []byte(`{"Expression":"6*7"}`))}}, nil
	})
	lc.a.AbandonCallsAfter = time.Nanosecond
	const thread = "late"
	sends, ok := lc.deliver(thread, "console", "what is 6*7?", "").(*xmlpipe.SendsResponse)
	if !ok {
		t.Fatal("the model's call was not sent")
	}
	if _, ok := lc.deliver(thread, "console", "never mind: hello", "").(*xmlpipe.RespondResponse); !ok {
		t.Fatal("the next message, the call abandoned, was not answered")
	}
	lc.deliver(thread, "calc", `{"Expression":"6*7","Value":"42"}`, sends.Sends[0].Ref)
	if _, ok := lc.deliver(thread, "console", "and now?", "").(*xmlpipe.RespondResponse); !ok {
		t.Fatal("the message after the late answer was not answered")
	}
	tc, _ := lc.cb.Thread(thread)
	late := -1
	for _, s := range tc.Slots() {
		if s.From == "calc" {
			late = s.Index
		}
	}
	var covered []int
	for _, s := range tc.Recorded() {
		if s.ContentType == contentToolCall {
			covered = s.Slots
		}
	}
	if late < 0 || !slices.Contains(covered, late) {
		t.Errorf("the call's recorded segment covers slots %v, not the late answer's %d", covered, late)
	}
}
