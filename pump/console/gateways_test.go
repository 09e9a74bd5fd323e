package console

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/oob/keys"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// TestStatusShowsGateways: /status describes each gateway on a line; a
// gateway whose link is down says why (here: nothing listens where it
// dials), so an operator tells a peer that is down from one that refuses
// the link.
func TestStatusShowsGateways(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nobody := closed.Addr().String()
	_ = closed.Close() // nothing listens there any more
	for _, tc := range []struct {
		name    string
		gateway string // its gateways[] entry; %s: the peer's key file
		want    string // its /status line
	}{
		{"accepting only", `{name: peer, trusted_identity: %s, export: [Greeting]}`,
			"peer: disconnected, 0 queued, 0 open calls; exports Greeting"},
		{"peer down", `{name: peer, remote_url: "wss://` + nobody + `", trusted_identity: %s, export: [Greeting]}`,
			"peer: disconnected (dial tcp " + nobody + ": connect: connection refused), 0 queued, 0 open calls; exports Greeting"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := gatewayOrganism(t, tc.gateway)
			var got []string
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				st, err := l.Status(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if got = st.Gateways; len(got) == 1 && got[0] == tc.want || time.Now().After(deadline) {
					break
				}
			}
			if diff := cmp.Diff([]string{tc.want}, got); diff != "" {
				t.Fatalf("gateways (-want +got):\n%s", diff)
			}
		})
	}
}

// gatewayOrganism starts an organism with a greeter and the gateway entry
// gateway (its %s: a fresh peer key's file), stopped when the test ends.
func gatewayOrganism(t *testing.T, gateway string) *organism.Local {
	t.Helper()
	dir := t.TempDir()
	if _, err := keys.Init(keys.PathsFor(dir, "")); err != nil {
		t.Fatal(err)
	}
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b, err := keys.MarshalPublic(pub)
	if err != nil {
		t.Fatal(err)
	}
	peer := filepath.Join(dir, "peer.pub")
	if err := os.WriteFile(peer, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse("organism.yaml", fmt.Appendf(nil, `organism: {name: gw}
listeners:
  - {name: greeter, payload_class: handlers.hello.Greeting, handler: handlers.hello.handle_greeting, description: Greets}
gateways:
  - `+gateway+`
`, peer))
	if err != nil {
		t.Fatal(err)
	}
	o, err := organism.New(cfg, organism.Options{DataDir: dir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = o.Shutdown(ctx)
	})
	return organism.NewLocal(o)
}
