package federation

import (
	"crypto/tls"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestHugeHandshakeFrameCut: an unauthenticated client that sends the
// acceptor a hello frame far larger than any handshake frame (one that
// would fill the organism's memory) has its link cut once it passes the
// handshake's frame cap, not read whole; the refusal is logged.
func TestHugeHandshakeFrameCut(t *testing.T) {
	c := newCallee(t, newKey(t))
	d := websocket.Dialer{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // test
	ws, _, err := d.Dial(c.url()+Path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	w, err := ws.NextWriter(websocket.TextMessage)
	if err != nil {
		t.Fatal(err)
	}
	const total, chunk = 64 << 20, 64 << 10
	_ = ws.NetConn().SetWriteDeadline(time.Now().Add(60 * time.Second))
	piece := []byte(`{"type":"hello","organism":"` + strings.Repeat("x", chunk))
	sent := 0
	for ; sent < total; sent += len(piece) {
		if _, err = w.Write(piece); err != nil {
			break
		}
	}
	if err == nil {
		err = w.Close()
	}
	// What the sockets' buffers hold besides the cap (a few MiB on
	// loopback) is written before the cut is seen; a link cut only by
	// the handshake's timeout has taken tens of MiB by then.
	const most = 16 << 20
	if err == nil || sent > most {
		t.Fatalf("a hello frame was read for %d KiB (%v); want the link cut before %d MiB", sent>>10, err, most>>20)
	}
	t.Logf("cut after %d KiB: %v", sent>>10, err)
	waitUntil(t, "the acceptor never logged the refused handshake", func() bool {
		return strings.Contains(c.logs.String(), "inbound link refused")
	})
}
