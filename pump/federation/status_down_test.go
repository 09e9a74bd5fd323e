package federation

import (
	"net"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// TestStatusSaysWhyTheLinkIsDown: while a gateway's link is down, its
// status says why — the peer unreachable, or the handshake refused — so an
// operator reading /api/v1/gateways or the console's /status tells the two
// apart; once the link is up it says nothing.
func TestStatusSaysWhyTheLinkIsDown(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nobody := "wss://" + closed.Addr().String()
	_ = closed.Close() // nothing listens there any more
	for _, tc := range []struct {
		name      string
		edit      func(*config.Gateway)
		connected bool
		want      string // in LastError ("": none)
	}{
		{"peer down", func(gc *config.Gateway) { gc.RemoteURL = nobody }, false, "connection refused"},
		{"handshake refused", func(gc *config.Gateway) { gc.TrustedIdentity = writePublic(t, newKey(t)) }, false,
			"peer identity not trusted"},
		{"up", func(*config.Gateway) {}, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			aKey := newKey(t)
			c := newCallee(t, aKey)
			a := newCallerWith(t, aKey, c, t.TempDir(), tc.edit)
			defer a.m.Close()
			var s GatewayStatus
			waitUntil(t, "the gateway's status never settled", func() bool {
				s = a.m.Status()[0]
				if tc.connected {
					return s.Connected
				}
				return s.LastError != ""
			})
			if s.Connected != tc.connected {
				t.Errorf("connected = %v, want %v", s.Connected, tc.connected)
			}
			if tc.want == "" && s.LastError != "" || !strings.Contains(s.LastError, tc.want) {
				t.Errorf("last error %q, want one saying %q", s.LastError, tc.want)
			}
		})
	}
}

// TestStatusSaysThePeerStopped: when the peer closes the link on purpose —
// here it stops — the status of the gateway it linked to says so, rather
// than a bare "websocket: close 1000 (normal)" an operator must decode.
func TestStatusSaysThePeerStopped(t *testing.T) {
	aKey := newKey(t)
	c := newCallee(t, aKey)
	a := newCallerWith(t, aKey, c, t.TempDir(), func(*config.Gateway) {})
	waitUntil(t, "the link never came up", func() bool { return c.m.Status()[0].Connected })
	a.m.Stop()
	var s GatewayStatus
	waitUntil(t, "the callee never saw the link go", func() bool {
		s = c.m.Status()[0]
		return !s.Connected && s.LastError != ""
	})
	if want := "the peer closed the link: it is stopping"; s.LastError != want {
		t.Errorf("last error %q, want %q", s.LastError, want)
	}
}
