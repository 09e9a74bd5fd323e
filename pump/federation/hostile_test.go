package federation

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/pump/federation/envsig"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestHostilePeer drives a callee from a peer that authenticated but then
// misbehaves: an unsigned envelope and one whose sender is changed to
// another organism are refused (nack), and so is one the peer signed naming
// another organism as sender (the link says who sent it: the claim is
// refused, never taken); bytes that are no envelope (no link
// id to refuse) and a text frame that is not JSON are dropped and logged;
// none reaches a listener, and the link goes on; a peer that stalls in the middle of a frame loses the link, and its
// next link is served.
func TestHostilePeer(t *testing.T) {
	aKey := newKey(t)
	c := newCallee(t, aKey)
	r, err := dialRaw(t, c, aKey)
	if err != nil {
		t.Fatal(err)
	}
	unsigned := func() []byte {
		lt := stage.NewThreadID()
		e := &envelope{From: "a", To: "echo", Thread: lt, Link: link{ID: lt, Kind: KindCall, Sent: time.Now()},
			Payload: []byte(`<Echo xmlns=""><Text>unsigned</Text></Echo>`)}
		return e.build()
	}()
	otherOrganism := bytesReplaceOnce(r.call("echo", `<Echo xmlns=""><Text>other</Text></Echo>`), "<from>a</from>", "<from>c</from>")
	signedAsOther := func() []byte {
		lt := stage.NewThreadID()
		e := &envelope{From: "c", To: "echo", Thread: lt, Link: link{ID: lt, Kind: KindCall, Sent: time.Now()},
			Payload: []byte(`<Echo xmlns=""><Text>as-c</Text></Echo>`)}
		b, err := envsig.Sign(aKey, e.build())
		if err != nil {
			t.Fatal(err)
		}
		return b
	}()
	for _, tc := range []struct {
		name string
		env  []byte
	}{
		{"unsigned", unsigned},
		{"from another organism", otherOrganism},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ack, _ := r.send(tc.env)
			if ack.Type != frameNack || ack.Error == "" {
				t.Fatalf("frame %+v, want a nack saying why", ack)
			}
			t.Logf("nack: %s", ack.Error)
		})
	}
	// Signed by the peer but naming another organism as its sender:
	// refused, saying so (TestEnvelopeClaimingAnotherFromRefused).
	ack, _ := r.send(signedAsOther)
	if ack.Type != frameNack || !strings.Contains(ack.Error, "is not the peer's organism") {
		t.Fatalf("call signed as another organism: %+v, want a nack", ack)
	}
	// Bytes with no link id to answer are dropped and logged; the next
	// frame the peer gets is the acknowledgement of its next good call.
	for _, junk := range [][]byte{[]byte("\x00\x01 not an envelope"), nil} {
		if err := r.ws.WriteMessage(websocket.BinaryMessage, junk); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.ws.WriteMessage(websocket.TextMessage, []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	ack, early := r.send(r.call("echo", `<Echo xmlns=""><Text>still</Text></Echo>`))
	if ack.Type != frameAck {
		t.Fatalf("good call after the junk: %+v", ack)
	}
	if len(early) == 0 {
		r.next() // its answer
	}
	for _, want := range []string{"malformed signed envelope", "refused a frame that is not JSON"} {
		if !strings.Contains(c.logs.String(), want) {
			t.Errorf("the callee's log does not say %q", want)
		}
	}
	if got := c.seen(); strings.Join(got, ",") != "a:still" {
		t.Fatalf("the echo listener saw %q, want the peer's good call, from a", got)
	}

	// Half a frame: a binary frame header announcing 1000 bytes, 10 of
	// them, then nothing. The callee drops the link once it is silent for
	// silenceLimit.
	half := append([]byte{0x82, 0x80 | 126, 0x03, 0xe8, 1, 2, 3, 4}, make([]byte, 10)...)
	if _, err := r.ws.NetConn().Write(half); err != nil {
		t.Fatal(err)
	}
	stalled := time.Now()
	_ = r.ws.NetConn().SetReadDeadline(time.Now().Add(silenceLimit + time.Minute))
	for {
		if _, _, err := r.ws.ReadMessage(); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatal("the callee kept a link stalled mid-frame")
			}
			break
		}
	}
	t.Logf("link dropped %v after the stall", time.Since(stalled).Round(time.Second))
	again, err := dialRaw(t, c, aKey)
	if err != nil {
		t.Fatalf("no new link after the stall: %v", err)
	}
	if ack, _ := again.send(again.call("echo", `<Echo xmlns=""><Text>back</Text></Echo>`)); ack.Type != frameAck {
		t.Fatalf("good call on the new link: %+v", ack)
	}
}

// bytesReplaceOnce replaces the first old in b with new.
func bytesReplaceOnce(b []byte, old, new string) []byte {
	return []byte(strings.Replace(string(b), old, new, 1))
}
