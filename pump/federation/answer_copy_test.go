package federation

import (
	"fmt"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// write sends env on r's link without waiting for anything.
func (r *rawPeer) write(env []byte) {
	r.t.Helper()
	if err := r.ws.WriteMessage(websocket.BinaryMessage, env); err != nil {
		r.t.Fatal(err)
	}
}

// frame reads the next text frame (an acknowledgement), skipping envelopes.
func (r *rawPeer) frame() frame {
	r.t.Helper()
	_ = r.ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		mt, b, err := r.ws.ReadMessage()
		if err != nil {
			r.t.Fatalf("no acknowledgement: %v", err)
		}
		if mt != websocket.TextMessage {
			continue
		}
		var f frame
		if err := jsonUnmarshal(b, &f); err != nil {
			r.t.Fatal(err)
		}
		return f
	}
}

// TestAnswerCopyAcknowledgedWithTheOriginal: an answer handed to the call
// waiting for it is acknowledged only once the handler's output carrying
// it is journaled; a copy of it that arrives meanwhile — on the same link,
// or on the link that replaced it after a reconnect, where the peer sends
// its outbox again — is not acknowledged at once as a duplicate (the peer
// would delete the answer, and a crash before the output commits would
// lose it) but with the original, on the link it came on. An envelope
// sent after the copy, acknowledged once its hash commits, marks that the
// copy's acknowledgement did not go first.
func TestAnswerCopyAcknowledgedWithTheOriginal(t *testing.T) {
	for _, tc := range []struct {
		name    string
		newLink bool
	}{
		{"same link", false},
		{"after a reconnect", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			aKey := newKey(t)
			c := newCallee(t, aKey)
			g := c.m.gateways[0]
			lt := stage.NewThreadID()
			waiting := &call{thread: stage.NewThreadID(), answer: make(chan answered, 1),
				refused: make(chan error, 1), cancelled: make(chan struct{})}
			g.mu.Lock()
			g.pending[lt] = waiting
			g.mu.Unlock()

			r1, err := dialRaw(t, c, aKey)
			if err != nil {
				t.Fatal(err)
			}
			id, env := r1.answer(lt)
			r1.write(env)
			var a answered
			select {
			case a = <-waiting.answer:
			case <-time.After(30 * time.Second):
				t.Fatal("the answer was never handed to the waiting call")
			}
			if a.e.Link.ID != id {
				t.Fatalf("the call was handed %s, want %s", a.e.Link.ID, id)
			}

			r2 := r1
			if tc.newLink {
				if r2, err = dialRaw(t, c, aKey); err != nil { // replaces r1's link
					t.Fatal(err)
				}
			}
			r2.write(env) // the copy
			markID, marker := r2.answer("nobody-waits")
			r2.write(marker)
			if f := r2.frame(); f.ID != markID || f.Type != frameAck {
				t.Fatalf("first frame after the copy: %+v, want the ack of %s: the copy was acknowledged "+
					"before the original's output was journaled", f, markID)
			}

			a.ack() // the handler's output is journaled
			want := []frame{{Type: frameAck, ID: id, Duplicate: true}}
			if !tc.newLink {
				want = append([]frame{{Type: frameAck, ID: id}}, want...)
			}
			for _, w := range want {
				if f := r2.frame(); f.Type != w.Type || f.ID != w.ID || f.Duplicate != w.Duplicate {
					t.Fatalf("got %+v, want %+v", f, w)
				}
			}
			// The marker is settled just after its acknowledgement was
			// sent (ackOnceSeen): wait for it rather than race it.
			waitUntil(t, "envelopes left unsettled once acknowledged", func() bool {
				g.unsettled.mu.Lock()
				defer g.unsettled.mu.Unlock()
				return len(g.unsettled.byHash) == 0
			})
		})
	}
}

// TestUnsettledSweepsWhatIsNeverAcknowledged: an original whose
// acknowledgement never comes (its handling dropped) is forgotten with
// its copies unsettledTTL after it was delivered, unacknowledged; a copy
// arriving after that is decided by the tables again.
func TestUnsettledSweepsWhatIsNeverAcknowledged(t *testing.T) {
	var u unsettled
	// A link whose acknowledgements are only listed (no writer runs).
	link := &conn{done: make(chan struct{})}
	link.acks = &acker{c: link, kick: make(chan struct{}, 1)}
	now := time.Now()
	h1, h2 := [32]byte{1}, [32]byte{2}
	never := func() (bool, error) { return false, nil }
	o, joined, dup, err := u.claim(h1, nil, "one", now, never)
	if err != nil || o == nil || joined || dup {
		t.Fatalf("original: %v %v %v %v", o, joined, dup, err)
	}
	if o2, joined, dup, _ := u.claim(h1, link, "one-copy", now, never); o2 != nil || !joined || !dup {
		t.Fatalf("copy: %v %v %v, want it joined to the original", o2, joined, dup)
	}
	if len(o.copies) != 1 || o.copies[0].id != "one-copy" {
		t.Fatalf("copies %+v", o.copies)
	}
	// A later original sweeps the first once it is older than the TTL.
	later := now.Add(unsettledTTL + time.Second)
	if o2, _, _, _ := u.claim(h2, nil, "two", later, never); o2 == nil {
		t.Fatal("a second original was not recorded")
	}
	if _, ok := u.byHash[h1]; ok {
		t.Fatal("an original never acknowledged was not swept")
	}
	if o3, joined, _, _ := u.claim(h1, nil, "one-again", later, func() (bool, error) { return true, nil }); o3 != nil || joined {
		t.Fatal("after the sweep the tables must decide for a copy")
	}
	if len(link.acks.list) != 0 {
		t.Fatalf("a copy of an original never acknowledged was acknowledged: %+v", link.acks.list)
	}
	// A late acknowledgement of the swept original acknowledges its copy
	// and removes nothing else.
	u.settle(o)
	if _, ok := u.byHash[h2]; !ok || len(u.byHash) != 1 {
		t.Fatalf("unsettled %v", u.byHash)
	}
	if len(link.acks.list) != 1 || link.acks.list[0] != (frame{Type: frameAck, ID: "one-copy", Duplicate: true}) {
		t.Fatalf("acknowledgements %+v, want the copy's", link.acks.list)
	}
}

// TestCallCopyAcknowledgedWithTheCall: a copy of a call that comes while
// the call is being injected is not acknowledged at once — the call may
// yet fail to be journaled — but once the call is (settleCall).
func TestCallCopyAcknowledgedWithTheCall(t *testing.T) {
	aKey := newKey(t)
	c := newCallee(t, aKey)
	g := c.m.gateways[0]
	r, err := dialRaw(t, c, aKey)
	if err != nil {
		t.Fatal(err)
	}
	lt := stage.NewThreadID()
	conv := derivedThread(c.m.secret, g.name, lt)
	injecting := &original{} // the call, being injected
	g.mu.Lock()
	g.inflight[conv] = injecting
	g.mu.Unlock()

	r.write(r.callOn("echo", `<Echo xmlns=""><Text>copy</Text></Echo>`, lt, time.Now()))
	markID, marker := r.answer("nobody-waits")
	r.write(marker)
	if f := r.frame(); f.ID != markID || f.Type != frameAck {
		t.Fatalf("first frame after the copy: %+v, want the ack of %s: the copy was acknowledged "+
			"before the call was journaled", f, markID)
	}
	g.settleCall(injecting) // the call is acknowledged
	if f := r.frame(); f.Type != frameAck || f.ID != lt || !f.Duplicate {
		t.Fatalf("got %+v, want the copy's acknowledgement", f)
	}
	// A copy that comes after, while the call is still in flight, is
	// acknowledged at once.
	if f, _ := r.send(r.callOn("echo", `<Echo xmlns=""><Text>copy</Text></Echo>`, lt, time.Now())); f.Type != frameAck || f.ID != lt || !f.Duplicate {
		t.Fatalf("got %+v, want the later copy's acknowledgement", f)
	}
	if got := c.seen(); len(got) != 0 {
		t.Fatalf("the echo saw %v: a copy was injected", got)
	}
}

// TestUnsettledCopiesBounded: a peer that sends one envelope over and over
// while its original waits cannot grow the list of copies: past maxCopies
// a copy is refused unacknowledged, and settling acknowledges the ones kept.
func TestUnsettledCopiesBounded(t *testing.T) {
	var u unsettled
	link := &conn{done: make(chan struct{})}
	link.acks = &acker{c: link, kick: make(chan struct{}, 1)}
	now := time.Now()
	never := func() (bool, error) { return false, nil }
	o, _, _, err := u.claim([32]byte{7}, nil, "orig", now, never)
	if err != nil || o == nil {
		t.Fatalf("original: %v %v", o, err)
	}
	for i := range 3 * maxCopies {
		if _, joined, dup, _ := u.claim([32]byte{7}, link, fmt.Sprintf("copy-%d", i), now, never); !joined || !dup {
			t.Fatalf("copy %d not refused as a copy", i)
		}
	}
	if len(o.copies) != maxCopies {
		t.Fatalf("%d copies kept, want %d", len(o.copies), maxCopies)
	}
	u.settle(o)
	if len(link.acks.list) != maxCopies || link.acks.list[0].ID != "copy-0" {
		t.Fatalf("acknowledgements %+v, want the %d copies kept", link.acks.list, maxCopies)
	}
}
