package console

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/oob/keys"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// TestStatusShowsGateways: /status describes each gateway on a line.
func TestStatusShowsGateways(t *testing.T) {
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
  - {name: peer, trusted_identity: %s, export: [Greeting]}
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
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = o.Shutdown(ctx)
	}()
	st, err := organism.NewLocal(o).Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"peer: disconnected, 0 queued, 0 open calls; exports Greeting"}
	if diff := cmp.Diff(want, st.Gateways); diff != "" {
		t.Fatalf("gateways (-want +got):\n%s", diff)
	}
}
