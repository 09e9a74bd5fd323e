package console_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump/bus"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/console"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// TestDialAskInsecureDevNeedsNoLogin: a bus run with --insecure-dev says so
// on GET /auth/me, so the console asks for no credentials (on a pipe it
// took the first three lines, @… messages included, for a login the server
// does not need), while a bus that authenticates still asks.
func TestDialAskInsecureDevNeedsNoLogin(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	l, err := organism.Assemble(organism.Options{Logger: logger, DataDir: t.TempDir()},
		func(o organism.Options) (*organism.Organism, error) {
			return organism.Load("testdata/organism.yaml", o)
		})
	if err != nil {
		t.Fatal(err)
	}
	o := l.Organism()
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := o.Shutdown(context.Background()); err != nil {
			t.Errorf("organism shutdown: %v", err)
		}
	})
	srv, err := bus.New(bus.Options{Insecure: true, Organism: o, Console: l, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), remoteWait)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("bus shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})

	ctx, cancel := context.WithTimeout(context.Background(), remoteWait)
	defer cancel()
	asked := false
	r, err := console.DialAsk(ctx, "http://"+ln.Addr().String(), "", func() (auth.Credentials, error) {
		asked = true
		return auth.Credentials{}, errors.New("asked for a login")
	})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer r.Close()
	if asked {
		t.Error("the console asked for credentials though the bus needs no login")
	}
	if r.Username == "" || r.Role != string(auth.Admin) {
		t.Errorf("session %q %q, want the dev admin", r.Username, r.Role)
	}

	// A bus that authenticates: ask is called, and its error is the dial's.
	b := startBus(t)
	errAsk := errors.New("no terminal")
	if _, err := console.DialAsk(ctx, b.url, b.fingerprint, func() (auth.Credentials, error) {
		return auth.Credentials{}, errAsk
	}); !errors.Is(err, errAsk) {
		t.Errorf("dial to an authenticating bus: %v, want %v", err, errAsk)
	}
}
