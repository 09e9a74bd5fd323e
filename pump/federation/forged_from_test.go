package federation

import (
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/federation/envsig"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestEnvelopeClaimingAnotherFromRefused: an envelope the peer signed
// whose <from> names another organism than the one the link's handshake
// named is refused — nacked saying why, logged as a security event — and
// never reaches a listener; the peer's next envelope, in its own name, is
// served.
func TestEnvelopeClaimingAnotherFromRefused(t *testing.T) {
	aKey := newKey(t)
	c := newCallee(t, aKey)
	r, err := dialRaw(t, c, aKey) // says hello as organism "a"
	if err != nil {
		t.Fatal(err)
	}
	lt := stage.NewThreadID()
	e := &envelope{From: "mallory", To: "echo", Thread: lt, Link: link{ID: lt, Kind: KindCall, Sent: time.Now()},
		Payload: []byte(`<Echo xmlns=""><Text>forged</Text></Echo>`)}
	forged, err := envsig.Sign(aKey, e.build())
	if err != nil {
		t.Fatal(err)
	}
	nack, _ := r.send(forged)
	if nack.Type != frameNack || nack.ID != lt || !strings.Contains(nack.Error, `"mallory"`) ||
		!strings.Contains(nack.Error, `"a"`) {
		t.Fatalf("the forged envelope was answered %+v; want a nack naming the claimed and the linked organism", nack)
	}
	ack, early := r.send(r.call("echo", `<Echo xmlns=""><Text>after</Text></Echo>`))
	if ack.Type != frameAck {
		t.Fatalf("the call after: %+v", ack)
	}
	if len(early) == 0 {
		r.next() // its answer
	}
	if got := c.seen(); strings.Join(got, ",") != "a:after" {
		t.Fatalf("the echo listener saw %q, want only the call in the peer's own name", got)
	}
	if logs := c.logs.String(); !strings.Contains(logs, "security: envelope refused: <from> is not the peer") ||
		!strings.Contains(logs, "mallory") {
		t.Errorf("no security line for the forged envelope:\n%s", logs)
	}
}
