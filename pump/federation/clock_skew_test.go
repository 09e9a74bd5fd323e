package federation

import (
	"crypto/ed25519"
	"crypto/tls"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// TestClockSkewToldAtLinkUp: two organisms whose clocks differ by more
// than a minute each warn of it as their link comes up, saying by how much
// and which way, and what is refused because of it: the operators read of
// the clocks before — not only after — their envelopes are refused as
// stale or from the future.
func TestClockSkewToldAtLinkUp(t *testing.T) {
	aKey := newKey(t)
	behind := func() time.Time { return time.Now().Add(-2 * time.Hour) }
	c := newCalleeEdited(t, aKey, newKey(t), "", nil, nil, func(o *Options) { o.Clock = behind })
	a := newCallerWith(t, aKey, c, t.TempDir(), func(*config.Gateway) {})
	defer a.m.Close()
	for _, tc := range []struct {
		side, want string
	}{
		{"callee", "the peer's clock is 2h0m"},
		{"caller", "the peer's clock is 2h0m"},
	} {
		way := "ahead of this organism's" // the callee's clock is behind the caller's
		if tc.side == "caller" {
			way = "behind this organism's"
		}
		waitUntil(t, "the "+tc.side+" never warned of the clocks", func() bool {
			for line := range strings.Lines(c.logs.String()) {
				if strings.Contains(line, "side=caller") == (tc.side == "caller") &&
					strings.Contains(line, tc.want) && strings.Contains(line, way) && strings.Contains(line, "level=WARN") {
					return true
				}
			}
			return false
		})
	}
}

// TestStaleRefusalNamesTheClock: an envelope refused as stale from a peer
// whose handshake showed its clock far behind this organism's says so in
// the refusal the peer's call fails with, so the peer's operator reads of
// the clocks, not of an envelope replayed.
func TestStaleRefusalNamesTheClock(t *testing.T) {
	aKey := newKey(t)
	c := newCallee(t, aKey)
	lag := -2 * time.Hour
	d := websocket.Dialer{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // test
	ws, _, err := d.Dial(c.url()+Path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	s := ws.NetConn().(*tls.Conn).ConnectionState()
	clock := func() time.Time { return time.Now().Add(lag) }
	if _, err := dialHandshake(ws, aKey, "a", c.key.Public().(ed25519.PublicKey), &s, clock); err != nil {
		t.Fatal(err)
	}
	r := &rawPeer{t: t, key: aKey, ws: ws}
	ack, _ := r.send(r.callSent("echo", `<Echo xmlns=""><Text>late</Text></Echo>`, clock()))
	if ack.Type != frameNack || !strings.Contains(ack.Error, "stale envelope") ||
		!strings.Contains(ack.Error, "2h0m") || !strings.Contains(ack.Error, "behind") {
		t.Errorf("refusal %+v; want a stale refusal saying the sender's clock is 2h behind", ack)
	}
	if got := c.seen(); len(got) != 0 {
		t.Errorf("the echo listener saw %q, want nothing", got)
	}
}
