package federation

import (
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// TestSilentPeerDialSaysSo: a peer that accepts the connection and then
// says nothing (a hung or stopped process, a firewall that swallows its
// answers) is told apart from one that is down: the dial's error says
// that the peer did not answer within the handshake's bound, not a bare
// "context deadline exceeded".
func TestSilentPeerDialSaysSo(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, conn) // accepted, never answered
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			_ = c.Close()
		}
	})
	aKey := newKey(t)
	c := newCallee(t, aKey)
	a := newCallerWith(t, aKey, c, t.TempDir(), func(gc *config.Gateway) { gc.RemoteURL = "wss://" + ln.Addr().String() })
	defer a.m.Close()
	waitUntil(t, "the dialer never said the peer did not answer", func() bool {
		for line := range strings.Lines(c.logs.String()) {
			if strings.Contains(line, "cannot reach the peer") && strings.Contains(line, "did not answer within 5s") {
				return true
			}
		}
		return false
	})
}
