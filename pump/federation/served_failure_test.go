package federation

import (
	"strings"
	"testing"
)

// TestServedFailureInsideIsAHuh: a call whose conversation fails inside
// the callee — a listener the exported one passed the message on to fails,
// and the exported one, hearing no errors, cannot answer — completes
// without an answer. The caller is told of the failure in the canned words
// of a <huh>, naming nothing of the callee's inside, rather than handed an
// end as if the callee had nothing to say.
func TestServedFailureInsideIsAHuh(t *testing.T) {
	aKey := newKey(t)
	c := newCallee(t, aKey)
	r, err := dialRaw(t, c, aKey)
	if err != nil {
		t.Fatal(err)
	}
	call := r.call("echo", `<Echo xmlns=""><Text>`+echoDelegateFail+`</Text></Echo>`)
	sent := mustParse(t, call)
	// The answer may come before the call's acknowledgement, which waits
	// for the call's journal record to be durable while the answer does
	// not wait for its outbox entry.
	ack, answers := r.send(call)
	if ack.Type != frameAck || ack.ID != sent.Link.ID {
		t.Fatalf("call acknowledged with %+v", ack)
	}
	if len(answers) == 0 {
		answers = append(answers, r.next())
	}
	a := mustParse(t, answers[0])
	if a.Link.Kind != KindHuh || a.Link.Ref != sent.Link.ID {
		t.Fatalf("the call was answered with %s for %s, want a huh for %s", a.Link.Kind, a.Link.Ref, sent.Link.ID)
	}
	if a.Link.Error == "" || strings.Contains(a.Link.Error, "breaker") {
		t.Errorf("the huh says %q: want the canned words, naming no listener of the callee", a.Link.Error)
	}
}
