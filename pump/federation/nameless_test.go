package federation

import (
	"crypto/ed25519"
	"crypto/tls"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gorilla/websocket"
)

// TestNamelessDialerRefused: a dialer with a trusted key whose hello names
// no organism is refused before the link is up, saying why, and counted
// under its gateway: every envelope of a link is checked against the
// organism its handshake named (a <from> claiming another is refused as
// forged), so a link naming none would let the peer's envelopes claim any
// <from> unchecked.
func TestNamelessDialerRefused(t *testing.T) {
	aKey := newKey(t)
	seen := make(refusalSignal, 16)
	c := newCalleeEdited(t, aKey, newKey(t), "", nil, nil, func(o *Options) { o.Observer = seen })
	_, err := dialRawAs(t, c, aKey, "")
	if err == nil {
		t.Fatal("a hello naming no organism was accepted")
	}
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "names no organism") {
		t.Errorf("the dialer was told %v; want a refusal saying its hello names no organism", err)
	}
	select {
	case got := <-seen:
		if d := cmp.Diff("a/"+RefusedHandshake, got); d != "" {
			t.Errorf("the acceptor's refusal (-want +got):\n%s", d)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the acceptor never counted the refused handshake")
	}
	waitUntil(t, "the callee never logged why it refused the nameless hello", func() bool {
		for line := range strings.Lines(c.logs.String()) {
			if strings.Contains(line, "inbound link refused") && strings.Contains(line, "gateway=a") &&
				strings.Contains(line, "names no organism") {
				return true
			}
		}
		return false
	})
	if got := c.seen(); len(got) != 0 {
		t.Errorf("the echo listener saw %q", got)
	}
	// The same key naming itself is served.
	if _, err := dialRawAs(t, c, aKey, "a"); err != nil {
		t.Fatalf("the peer naming itself was refused: %v", err)
	}
}

// TestNamelessAcceptorRefused: a dialer refuses an acceptor whose
// challenge names no organism (ErrNameless), and tells it why.
func TestNamelessAcceptorRefused(t *testing.T) {
	aKey, bKey := newKey(t), newKey(t)
	accepted := make(chan error, 1)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			accepted <- err
			return
		}
		defer ws.Close()
		trust := func(k ed25519.PublicKey) *gateway {
			if k.Equal(aKey.Public()) {
				return &gateway{name: "a"}
			}
			return nil
		}
		_, _, _, err = acceptHandshake(ws, bKey, "", trust, r.TLS, nil, time.Now)
		accepted <- err
	}))
	defer srv.Close()
	d := websocket.Dialer{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // test
	ws, _, err := d.Dial("wss"+strings.TrimPrefix(srv.URL, "https")+Path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	cs := ws.NetConn().(*tls.Conn).ConnectionState()
	_, err = dialHandshake(ws, aKey, "a", bKey.Public().(ed25519.PublicKey), &cs, time.Now)
	if !errors.Is(err, ErrNameless) || !refusedHandshake(err) {
		t.Errorf("the dialer's handshake ended with %v; want ErrNameless, counted as a refused handshake", err)
	}
	select {
	case err := <-accepted:
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "names no organism") {
			t.Errorf("the acceptor was told %v; want a refusal saying its challenge names no organism", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the acceptor's handshake never ended")
	}
}
