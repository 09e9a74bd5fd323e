package federation

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// TestAddedGatewaySendsAnswersLeftBefore: the callee died once a served
// conversation's answer was durable in its journal, before the answer's
// outbox entry committed (as in TestAnswerGivenBeforeACrashIsSent), and
// started again without that gateway (the operator took it out of
// organism.yaml meanwhile). A reload that adds the gateway back sends the
// answer the earlier run left, as a start with it would: the call is
// answered. It used to be lost: the served rows of a gateway absent at
// start were never looked at again.
func TestAddedGatewaySendsAnswersLeftBefore(t *testing.T) {
	aKey, bKey, dir := newKey(t), newKey(t), t.TempDir()
	hold := make(chan struct{})
	c := newCalleeWith(t, aKey, bKey, dir, hold, &store.Options{})
	gc := c.m.list()[0].settings()
	snapped := make(chan string, 1)
	c.m.beforeAnswer = func(string) { snapped <- crashState(t, c.st, dir) }
	r, err := dialRaw(t, c, aKey)
	if err != nil {
		t.Fatal(err)
	}
	call := r.call("echo", `<Echo xmlns=""><Text>kept</Text></Echo>`)
	sent := mustParse(t, call)
	if ack, _ := r.send(call); ack.Type != frameAck || ack.ID != sent.Link.ID {
		t.Fatalf("call acknowledged with %+v", ack)
	}
	close(hold)
	var crashed string
	select {
	case crashed = <-snapped:
	case <-time.After(60 * time.Second):
		t.Fatal("the echo's answer never reached the gateway")
	}
	if crashed == "" {
		t.Fatal("no crash state taken")
	}

	c2 := newCalleeEdited(t, aKey, bKey, crashed, nil, &store.Options{}, func(o *Options) { o.Gateways = nil })
	if n := len(c2.m.Status()); n != 0 {
		t.Fatalf("the restart runs %d gateways, want none", n)
	}
	ch, err := c2.m.PlanGateways([]config.Gateway{gc}, func(i int, f string) string { return fmt.Sprintf("gateways[%d].%s", i, f) })
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"a"}, ch.Added); d != "" {
		t.Errorf("added (-want +got):\n%s", d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := ch.Apply(ctx); err != nil {
		t.Fatal(err)
	}
	if q := c2.m.Status()[0].Queued; q != 1 {
		t.Fatalf("after the reload %d envelopes wait for the peer, want the answer", q)
	}
	r2, err := dialRaw(t, c2, aKey)
	if err != nil {
		t.Fatal(err)
	}
	a := mustParse(t, r2.next())
	if a.Link.Kind != KindReply || a.Link.Ref != sent.Link.ID || !bytes.Contains(a.Payload, []byte("KEPT")) {
		t.Fatalf("after the reload got %s for %s with %q, want the reply KEPT to %s", a.Link.Kind, a.Link.Ref, a.Payload,
			sent.Link.ID)
	}
	if err := r2.ws.WriteMessage(websocket.TextMessage, frame{Type: frameAck, ID: a.Link.ID}.marshal()); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the acknowledged answer stayed in the outbox", func() bool { return c2.m.Status()[0].Queued == 0 })
}
