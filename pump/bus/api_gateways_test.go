package bus

import (
	"crypto/ed25519"
	"crypto/rand"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/oob/keys"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// federatedB builds organism B of the README's federation walkthrough in
// its data directory (with a fresh organism identity), its gateway a
// trusting a peer key that never connects: the gateway is configured and
// disconnected. edits change the gateway's entry.
func federatedB(t *testing.T, edits ...func(*config.Gateway)) buildFunc {
	return func(o organism.Options) (*organism.Organism, error) {
		if _, err := keys.Init(keys.PathsFor(o.DataDir, "")); err != nil {
			return nil, err
		}
		pub, _, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, err
		}
		pem, err := keys.MarshalPublic(pub)
		if err != nil {
			return nil, err
		}
		peer := filepath.Join(t.TempDir(), "a.pub")
		if err := os.WriteFile(peer, pem, 0o600); err != nil {
			return nil, err
		}
		cfg, err := config.Load(filepath.Join("..", "..", "testdata", "federation", "b.yaml"))
		if err != nil {
			return nil, err
		}
		cfg.Gateways[0].TrustedIdentity = peer
		for _, edit := range edits {
			edit(&cfg.Gateways[0])
		}
		return organism.New(cfg, o)
	}
}

// TestAPIGateways: GET /api/v1/gateways (viewer and up) reports each
// gateway of the organism with its link state, queue, open calls, imports
// and exports; an organism without gateways reports none.
func TestAPIGateways(t *testing.T) {
	f := newFixtureWith(t, federatedB(t))
	tok := f.tokens()
	for _, role := range []auth.Role{auth.Viewer, auth.Operator, auth.Admin} {
		status, body, _ := f.do("GET", "/api/v1/gateways", tok[role], nil)
		want := map[string]any{"gateways": []any{map[string]any{"name": "a", "connected": false, "peer": "",
			"queued": 0.0, "open_calls": 0.0, "imports": []any{}, "exports": []any{"Greeting"}}}}
		if d := cmp.Diff(want, body); status != 200 || d != "" {
			t.Errorf("as %s: %d (-want +got):\n%s", role, status, d)
		}
	}
	if status, _, _ := f.do("GET", "/api/v1/gateways", "", nil); status != 401 {
		t.Errorf("without a session: %d, want 401", status)
	}

	plain := newFixture(t)
	status, body, _ := plain.do("GET", "/api/v1/gateways", plain.tokens()[auth.Viewer], nil)
	if d := cmp.Diff(map[string]any{"gateways": []any{}}, body); status != 200 || d != "" {
		t.Errorf("no gateways: %d (-want +got):\n%s", status, d)
	}
}

// TestAPIGatewaysSayWhyDown: a gateway whose link is down says why in
// last_error (here: nothing listens where it dials), so an operator tells
// a peer that is down from one that refuses the link.
func TestAPIGatewaysSayWhyDown(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nobody := closed.Addr().String()
	_ = closed.Close() // nothing listens there any more
	f := newFixtureWith(t, federatedB(t, func(gc *config.Gateway) { gc.RemoteURL = "wss://" + nobody }))
	tok := f.tokens()[auth.Operator]
	want := "dial tcp " + nobody + ": connect: connection refused"
	var got any
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		status, body, _ := f.do("GET", "/api/v1/gateways", tok, nil)
		if status != 200 {
			t.Fatalf("status %d", status)
		}
		got = body["gateways"].([]any)[0].(map[string]any)["last_error"]
		if got == want {
			return
		}
	}
	t.Errorf("last_error %v, want %q", got, want)
}
