package main

import (
	"context"
	"crypto/ed25519"
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

// TestStoredIdentityForms: register-remote-gateway's identity is the
// peer's raw key in base64, or the base64 line of what `xmlpipe keys
// export` (and `keys show`) print for it — the form an operator has; any
// other key or text is refused, saying what to give.
func TestStoredIdentityForms(t *testing.T) {
	pub, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	pemBytes, err := keys.MarshalPublic(pub)
	if err != nil {
		t.Fatal(err)
	}
	var pkix string // the line between the PEM armour
	for line := range strings.Lines(string(pemBytes)) {
		if !strings.HasPrefix(line, "-----") {
			pkix += strings.TrimSpace(line)
		}
	}
	rsaLike := base64.StdEncoding.EncodeToString([]byte("not a key at all, but long enough to not be 32"))
	for _, tc := range []struct {
		name, identity string
		want           ed25519.PublicKey // nil: refused
	}{
		{"raw", base64.StdEncoding.EncodeToString(pub), pub},
		{"keys export line", pkix, pub},
		{"keys export line with spaces", " " + pkix + "\n", pub},
		{"other bytes", rsaLike, nil},
		{"not base64", "%%%", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := storedGateway(oob.RegisterRemoteGateway{URL: "wss://peer.example:8767", Identity: tc.identity})
			if tc.want == nil {
				if err == nil || !strings.Contains(err.Error(), "keys export") {
					t.Fatalf("identity %q: %v, want a refusal naming the accepted forms", tc.identity, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]byte(tc.want), g.TrustedKey); diff != "" {
				t.Errorf("trusted key (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGatewayRunnerAfterReload: register-remote-gateway judges "organism.yaml
// reaches it already" by the configuration in force: once a reload took the
// peer's gateway out of organism.yaml, the peer may be registered over OOB
// (it was refused, naming the gateway the reload had removed).
func TestGatewayRunnerAfterReload(t *testing.T) {
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
	addr := "wss" + strings.TrimPrefix(srv.URL, "https")
	path := filepath.Join(dirA, "organism.yaml")
	cfgA, err := config.Parse(path, fmt.Appendf(nil, `organism: {name: organism-a}
gateways:
  - {name: b, remote_url: %q, trusted_identity: %s, import: [Greeting]}
`, addr, filepath.Join(dirA, "b.pub")))
	if err != nil {
		t.Fatal(err)
	}
	orgA := startDurable(t, cfgA, dirA)
	pub, err := keys.ReadPublic(filepath.Join(dirA, "b.pub"))
	if err != nil {
		t.Fatal(err)
	}
	r := gatewayRunner{orgA}
	g := oob.RegisterRemoteGateway{URL: addr, Identity: base64.StdEncoding.EncodeToString(pub),
		ImportTags: &oob.TagList{Tags: []string{"Greeting"}}}
	if err := r.AddGateway(g); err == nil || !strings.Contains(err.Error(), "reaches it already as gateway b") {
		t.Fatalf("registering a peer organism.yaml reaches: %v", err)
	}

	without, err := config.Parse(path, []byte("organism: {name: organism-a}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := orgA.Reload(without); err != nil {
		t.Fatal(err)
	}
	if err := r.AddGateway(g); err != nil {
		t.Fatalf("registering the peer once a reload took its gateway out: %v", err)
	}
	u, _ := url.Parse(addr)
	if s := orgA.Federation.Status(); len(s) != 1 || s[0].Name != storedName(u) {
		t.Fatalf("gateways after registering: %+v", s)
	}
}
