package federation

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/federation/envsig"
)

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// TestLinkRefusals drives a callee by hand: a good call is acknowledged
// once it is journaled and answered; a replayed, tampered, foreign-signed,
// unexported or privileged envelope is refused, logged, and never reaches
// a listener; an untrusted key never gets a link.
func TestLinkRefusals(t *testing.T) {
	aKey := newKey(t)
	c := newCallee(t, aKey)
	if _, err := dialRaw(t, c, newKey(t)); !errors.Is(err, ErrRefused) {
		t.Fatalf("untrusted key: handshake error %v, want ErrRefused", err)
	}
	r, err := dialRaw(t, c, aKey)
	if err != nil {
		t.Fatal(err)
	}
	good := r.call("echo", `<Echo xmlns=""><Text>hi</Text></Echo>`)
	ack, early := r.send(good)
	if ack.Type != frameAck || ack.Duplicate {
		t.Fatalf("good call: %+v", ack)
	}
	var reply []byte
	if len(early) > 0 {
		reply = early[0] // the answer may overtake the acknowledgement
	} else {
		reply = r.next()
	}
	if err := envsig.Verify(c.key.Public().(ed25519.PublicKey), reply); err != nil {
		t.Fatalf("the reply is not signed by the callee: %v", err)
	}
	e, err := parse(reply)
	if err != nil {
		t.Fatal(err)
	}
	if e.Link.Kind != KindReply || !bytes.Contains(e.Payload, []byte("<Text>HI</Text>")) {
		t.Fatalf("reply %s %s", e.Link.Kind, e.Payload)
	}

	tampered := bytes.Replace(r.call("echo", `<Echo xmlns=""><Text>hi</Text></Echo>`), []byte("hi"), []byte("HO"), 1)
	foreign := func() []byte {
		other := &rawPeer{t: t, key: newKey(t)}
		return other.call("echo", `<Echo xmlns=""><Text>forged</Text></Echo>`)
	}()
	for _, tc := range []struct {
		name, log string
		env       []byte
		want      string // ack type
	}{
		{"replayed", "copy of a call already received refused", good, frameAck},
		{"tampered", "signature", tampered, frameNack},
		{"wrong key", "signature", foreign, frameNack},
		{"unexported tag", "not exported refused", r.call("", `<Secret xmlns=""><Text>x</Text></Secret>`), frameNack},
		{"stale", "stale envelope refused", r.callSent("echo", `<Echo xmlns=""><Text>old</Text></Echo>`,
			time.Now().Add(-2*time.Hour)), frameNack},
		{"privileged root", "privileged root refused",
			r.call("", `<shutdown xmlns="https://xml-pipeline.org/privileged-msg" mode="immediate"/>`), frameNack},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ack, _ := r.send(tc.env)
			if ack.Type != tc.want {
				t.Fatalf("frame %+v, want %s", ack, tc.want)
			}
			if tc.want == frameAck && !ack.Duplicate {
				t.Fatal("a replay was acknowledged as new")
			}
			if !strings.Contains(c.logs.String(), tc.log) {
				t.Errorf("log lacks %q", tc.log)
			}
		})
	}
	if !strings.Contains(c.logs.String(), "inbound link refused") {
		t.Error("the refused identity was not logged")
	}
	if got := c.seen(); len(got) != 1 || got[0] != "a:hi" {
		t.Fatalf("the echo listener saw %q, want only the one good call", got)
	}
}

// TestLinkEvents: watchers see gateway-connected when a peer's link is up
// and gateway-disconnected when it goes.
func TestLinkEvents(t *testing.T) {
	aKey := newKey(t)
	c := newCallee(t, aKey)
	events := make(chan string, 4)
	cancel := c.m.Watch(func(event, gw, _ string) { events <- event + " " + gw })
	defer cancel()
	r, err := dialRaw(t, c, aKey)
	if err != nil {
		t.Fatal(err)
	}
	if got := <-events; got != "gateway-connected a" {
		t.Fatalf("event %q", got)
	}
	if s := c.m.Status()[0]; !s.Connected || s.Peer != "a" {
		t.Fatalf("status %+v", s)
	}
	_ = r.ws.Close()
	if got := <-events; got != "gateway-disconnected a" {
		t.Fatalf("event %q", got)
	}
}

// TestSkewedClockRefusalSaysSo: an envelope sent too long ago is refused
// as stale; one "sent" further in the future than the skew allowed — the
// peer's clock runs ahead, and every envelope it sends is refused — is
// refused saying the clocks differ, to the peer (the refusal its call
// fails with) and in this side's log.
func TestSkewedClockRefusalSaysSo(t *testing.T) {
	aKey := newKey(t)
	c := newCallee(t, aKey)
	r, err := dialRaw(t, c, aKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		sent time.Duration // from now
		want string        // in the refusal and the log
	}{
		{"old", -2 * time.Hour, "stale envelope"},
		{"clock ahead", time.Hour, "clocks of the two organisms differ by more than 5m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ack, _ := r.send(r.callSent("echo", `<Echo xmlns=""><Text>skew</Text></Echo>`, time.Now().Add(tc.sent)))
			if ack.Type != frameNack || !strings.Contains(ack.Error, tc.want) {
				t.Errorf("refusal %+v, want a nack saying %q", ack, tc.want)
			}
			if !strings.Contains(c.logs.String(), tc.want) {
				t.Errorf("log lacks %q", tc.want)
			}
		})
	}
	if got := c.seen(); len(got) != 0 {
		t.Errorf("the echo listener saw %q, want nothing", got)
	}
}

// TestUntrustedAcceptorToldWhy: a dialer that does not trust the key its
// peer presents (the peer's identity was rotated) tells the peer why it
// drops the link, as an acceptor tells a dialer: the peer's operator reads
// that its identity is not trusted, not of a link cut short.
func TestUntrustedAcceptorToldWhy(t *testing.T) {
	aKey := newKey(t)
	c := newCallee(t, aKey)
	a := newCallerWith(t, aKey, c, t.TempDir(), func(gc *config.Gateway) {
		gc.TrustedIdentity = writePublic(t, newKey(t)) // not c's key
	})
	defer a.m.Close()
	const want = "refused by the peer: identity not trusted"
	waitUntil(t, "the callee never logged why the dialer refused it", func() bool {
		for line := range strings.Lines(c.logs.String()) {
			if strings.Contains(line, "inbound link refused") && strings.Contains(line, want) {
				return true
			}
		}
		return false
	})
}
