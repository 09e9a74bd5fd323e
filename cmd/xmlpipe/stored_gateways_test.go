package main

import (
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/oob"
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
	for _, why := range []string{"reaches it already as gateway known", "want a wss:// URL", "32-byte Ed25519 public key"} {
		if !strings.Contains(logs.String(), why) {
			t.Errorf("log lacks %q:\n%s", why, logs.String())
		}
	}
	if got := storedGateways(t.TempDir(), cfg, slog.New(slog.DiscardHandler)); got != nil {
		t.Fatalf("no file: %v", got)
	}
}
