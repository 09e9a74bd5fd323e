package oob

import (
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestDialNotAnOOBChannel: ctl pointed at something else — the main bus,
// which speaks HTTPS, or any HTTP server — says so, instead of gorilla's
// bare "websocket: bad handshake".
func TestDialNotAnOOBChannel(t *testing.T) {
	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	tlsSrv := httptest.NewTLSServer(http.NotFoundHandler())
	defer tlsSrv.Close()
	plain := httptest.NewServer(http.NotFoundHandler())
	defer plain.Close()
	tests := []struct {
		name, endpoint, want string
	}{
		{"the main bus (HTTPS)", strings.TrimPrefix(tlsSrv.URL, "https://"),
			"it speaks HTTPS: not an OOB channel (the main bus? the OOB channel is oob.bind:oob.port, 127.0.0.1:8766 by default)"},
		{"another HTTP server", strings.TrimPrefix(plain.URL, "http://"),
			"not an OOB channel: it answered HTTP 404 Not Found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			c, err := Dial(ctx, tt.endpoint, key)
			if err == nil {
				c.Close()
				t.Fatal("dial succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrNotOOB) {
				t.Errorf("error %q\nwant ErrNotOOB and %q", err, tt.want)
			}
		})
	}
}

// TestDialTLSTrustsGivenRoots: a remote OOB channel (allow_remote_oob)
// serves the certificate of oob.tls, most often self-signed; DialTLS
// verifies the server against the roots it is given.
func TestDialTLSTrustsGivenRoots(t *testing.T) {
	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	upgraded := make(chan struct{}, 1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		upgraded <- struct{}{}
		_ = ws.Close()
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake below is expected
	srv.StartTLS()
	defer srv.Close()
	url := "wss" + strings.TrimPrefix(srv.URL, "https")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if c, err := DialTLS(ctx, url, key, nil); err == nil {
		c.Close()
		t.Fatal("a self-signed certificate verified against the system roots")
	}
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	c, err := DialTLS(ctx, url, key, &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatalf("dial with the server's certificate as root: %v", err)
	}
	c.Close()
	select {
	case <-upgraded:
	case <-ctx.Done():
		t.Fatal("the server never upgraded the connection")
	}
}
