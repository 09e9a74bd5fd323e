package federation

import (
	"crypto/tls"
	"net"
	"syscall"
	"testing"
)

// tcpPair is a connected loopback TCP pair; both ends close with the test.
func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			accepted <- nil
			return
		}
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// corked reads TCP_CORK of c's socket.
func corked(t *testing.T, c net.Conn) bool {
	t.Helper()
	raw, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var v int
	var gerr error
	if err := raw.Control(func(fd uintptr) {
		v, gerr = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_CORK)
	}); err != nil || gerr != nil {
		t.Fatalf("getsockopt TCP_CORK: %v %v", err, gerr)
	}
	return v != 0
}

// TestCorkerBatch: a batch of several messages is written with the link's
// socket corked, found under its TLS, and the socket is uncorked when the
// last of overlapping batches (sender and acker) ends; a single message,
// or a link with no socket under it, is written as it is.
func TestCorkerBatch(t *testing.T) {
	client, _ := tcpPair(t)
	tlsClient := tls.Client(client, &tls.Config{InsecureSkipVerify: true})
	for _, tc := range []struct {
		name string
		n    int
		want bool // corked while writing
	}{
		{"several", 3, true},
		{"two", 2, true},
		{"one", 1, false},
		{"none", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := &corker{find: func() any { return tlsClient }}
			ran := false
			k.batch(tc.n, func() {
				ran = true
				if got := corked(t, client); got != tc.want {
					t.Errorf("corked while writing %d messages: %v, want %v", tc.n, got, tc.want)
				}
			})
			if !ran {
				t.Fatal("the batch's write did not run")
			}
			if corked(t, client) {
				t.Error("still corked after the batch")
			}
		})
	}

	t.Run("overlapping", func(t *testing.T) {
		k := &corker{find: func() any { return client }}
		k.batch(2, func() {
			k.batch(2, func() {})
			if !corked(t, client) {
				t.Error("uncorked by the inner batch while the outer one writes")
			}
		})
		if corked(t, client) {
			t.Error("still corked after both batches")
		}
	})

	t.Run("no socket", func(t *testing.T) {
		a, b := net.Pipe()
		defer a.Close()
		defer b.Close()
		k := &corker{find: func() any { return a }}
		ran := false
		k.batch(5, func() { ran = true })
		if !ran {
			t.Error("the batch's write did not run over a pipe")
		}
	})
}
