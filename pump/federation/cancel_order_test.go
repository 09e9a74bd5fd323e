package federation

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/federation/envsig"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestCancelBehindAWaitingCallStopsIt: a peer that imports something
// holds the calls of a new link until it has asked for its imports; a
// cancel that comes meanwhile, right behind its call — the caller's
// outbox sent again after a reconnect: a call that left before the link
// was lost, and the cancel of a caller that stopped waiting while it was
// down — must still stop that call. It was handled at once, found no
// conversation to kill and was dropped, and the call, let through a
// moment later, ran for nobody.
func TestCancelBehindAWaitingCallStopsIt(t *testing.T) {
	aKey := newKey(t)
	hold := make(chan struct{})
	holding := true
	defer func() {
		if holding {
			close(hold)
		}
	}()
	c := newCalleeEdited(t, aKey, newKey(t), "", hold, nil, func(o *Options) {
		o.Gateways[0].Import = []string{"Missing"} // asked of the peer as the link comes up
	})
	events := make(chan pump.Event, 64)
	defer c.pump.Subscribe(pump.OutletFunc(func(e pump.Event) {
		if e.Kind == pump.EventComplete {
			events <- e
		}
	}))()
	r, err := dialRaw(t, c, aKey)
	if err != nil {
		t.Fatal(err)
	}
	lt := stage.NewThreadID()
	call := r.callOn("echo", `<Echo xmlns=""><Text>late</Text></Echo>`, lt, time.Now())
	cancel := r.sign(&envelope{From: "a", Thread: lt, Link: link{ID: uuid.NewString(), Kind: KindCancel, Ref: lt,
		Sent: time.Now()}})
	r.write(call)
	r.write(cancel)
	// The callee asks for its imports; told no, it lets the call through.
	q, err := parse(r.next())
	if err != nil {
		t.Fatal(err)
	}
	if q.Link.Kind != KindMeta {
		t.Fatalf("the callee sent a %s, want its meta question", q.Link.Kind)
	}
	answer := r.sign(&envelope{From: "a", Thread: q.Thread, Link: link{ID: uuid.NewString(), Kind: KindMetaAnswer,
		Ref: q.Link.ID, Sent: time.Now(), Error: "meta introspection is off"}})
	r.write(answer)
	r.awaitAck(lt)
	close(hold)
	holding = false
	conv := derivedThread(c.m.secret, "a", lt)
	deadline := time.After(60 * time.Second)
	for {
		select {
		case e := <-events:
			if e.Conversation != conv && e.Thread != conv {
				continue
			}
			if e.Error != pump.KilledReason {
				t.Fatalf("the cancelled call's conversation completed with %q, want it killed (%q)", e.Error, pump.KilledReason)
			}
			return
		case <-deadline:
			t.Fatal("the cancelled call's conversation never completed")
		}
	}
}

// sign signs e with the raw peer's key.
func (r *rawPeer) sign(e *envelope) []byte {
	r.t.Helper()
	b, err := envsig.Sign(r.key, e.build())
	if err != nil {
		r.t.Fatal(err)
	}
	return b
}

// awaitAck reads the link until the acknowledgement of envelope id.
func (r *rawPeer) awaitAck(id string) {
	r.t.Helper()
	_ = r.ws.SetReadDeadline(time.Now().Add(60 * time.Second))
	for {
		mt, b, err := r.ws.ReadMessage()
		if err != nil {
			r.t.Fatalf("no acknowledgement of %s: %v", id, err)
		}
		if mt != websocket.TextMessage {
			continue
		}
		var f frame
		if err := jsonUnmarshal(b, &f); err != nil {
			r.t.Fatal(err)
		}
		if f.ID == id {
			if f.Type != frameAck {
				r.t.Fatalf("envelope %s: %+v, want an acknowledgement", id, f)
			}
			return
		}
	}
}
