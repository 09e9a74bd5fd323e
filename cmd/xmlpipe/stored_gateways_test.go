package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/oob"
	"github.com/xml-pipeline/xmlpipe/oob/keys"
	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// TestStoredGateways: what register-remote-gateway stored becomes
// gateways[] entries at the next start, except entries organism.yaml
// already reaches and entries that cannot be used (logged).
func TestStoredGateways(t *testing.T) {
	key := make([]byte, 32)
	key[0] = 7
	b64 := base64.StdEncoding.EncodeToString(key)
	stored := []oob.RegisterRemoteGateway{
		{URL: "wss://peer.example:8767", Identity: b64, ImportTags: &oob.TagList{Tags: []string{"Greeting"}}, Description: "peer"},
		{URL: "wss://known.example:8767", Identity: b64},
		{URL: "https://wrong.example", Identity: b64},
		{URL: "wss://short.example", Identity: base64.StdEncoding.EncodeToString([]byte("short"))},
		{URL: "wss://tag.example", Identity: b64, ImportTags: &oob.TagList{Tags: []string{"bad:tag"}}},
	}
	data := t.TempDir()
	b, err := json.Marshal(stored)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, gatewayStore), b, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Organism{Gateways: []config.Gateway{{Name: "known", RemoteURL: "wss://known.example:8767"}}}
	var logs strings.Builder
	got := storedGateways(data, cfg, slog.New(slog.NewTextHandler(&logs, nil)))
	want := []config.Gateway{{Name: "remote-peer-example-8767", RemoteURL: "wss://peer.example:8767", TrustedKey: key,
		Description: "peer", Import: []string{"Greeting"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("gateways (-want +got):\n%s", diff)
	}
	for _, why := range []string{"reaches it already as gateway known", "want a wss:// URL", "32-byte Ed25519 public key",
		"is not a payload root tag"} {
		if !strings.Contains(logs.String(), why) {
			t.Errorf("log lacks %q:\n%s", why, logs.String())
		}
	}
	if got := storedGateways(t.TempDir(), cfg, slog.New(slog.DiscardHandler)); got != nil {
		t.Fatalf("no file: %v", got)
	}
}

// TestGatewayRunner: a gateway registered over OOB starts at once in the
// running organism (and links up with its peer), and stops when
// unregistered; organism.yaml's peers are not taken over.
func TestGatewayRunner(t *testing.T) {
	dirA, dirB := federatedDirs(t)
	cfgB, err := config.Parse(filepath.Join(dirB, "organism.yaml"), fmt.Appendf(nil, `organism: {name: organism-b}
oob: {enabled: false}
listeners:
  - {name: greeter, payload_class: handlers.hello.Greeting, handler: handlers.hello.handle_greeting, description: Greets}
gateways:
  - {name: a, trusted_identity: %s, export: [Greeting]}
`, filepath.Join(dirB, "a.pub")))
	if err != nil {
		t.Fatal(err)
	}
	orgB := startDurable(t, cfgB, dirB)
	srv := httptest.NewUnstartedServer(orgB.Federation.Handler())
	srv.StartTLS()
	t.Cleanup(srv.Close)
	cfgA, err := config.Parse(filepath.Join(dirA, "organism.yaml"), []byte("organism: {name: organism-a}\n"))
	if err != nil {
		t.Fatal(err)
	}
	orgA := startDurable(t, cfgA, dirA)
	if orgA.Federation == nil {
		t.Fatal("a durable organism with an identity has no federation manager")
	}
	up := make(chan string, 4)
	orgA.Federation.Watch(func(event, gw, _ string) { up <- event + " " + gw })

	pub, err := keys.ReadPublic(filepath.Join(dirA, "b.pub"))
	if err != nil {
		t.Fatal(err)
	}
	addr := "wss" + strings.TrimPrefix(srv.URL, "https")
	r := gatewayRunner{orgA}
	g := oob.RegisterRemoteGateway{URL: addr, Identity: base64.StdEncoding.EncodeToString(pub),
		ImportTags: &oob.TagList{Tags: []string{"Greeting"}}}
	if err := r.AddGateway(g); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(addr)
	name := storedName(u)
	select {
	case e := <-up:
		if e != "gateway-connected "+name {
			t.Fatalf("event %q", e)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the registered gateway never linked up: %+v", orgA.Federation.Status())
	}
	if err := r.RemoveGateway(context.Background(), addr); err != nil {
		t.Fatal(err)
	}
	if s := orgA.Federation.Status(); len(s) != 0 {
		t.Fatalf("gateways after unregistering: %+v", s)
	}
	if err := r.RemoveGateway(context.Background(), addr); err != nil {
		t.Fatalf("unregistering twice: %v", err)
	}
}
