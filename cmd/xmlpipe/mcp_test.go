package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// TestMCPStdio runs `xmlpipe mcp` as a subprocess and talks to it with the
// SDK's client over stdio, as Claude Desktop would.
func TestMCPStdio(t *testing.T) {
	dir := helloDir(t)
	cfg := filepath.Join(dir, "organism.yaml")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The greeter may use calculate: its listener is registered.
	b = []byte(strings.Replace(string(b), "peers: [shouter]", "peers: [shouter]\n    tools: [calculate]", 1))
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.Command(binary, "mcp", "--data", data, cfg)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "v0"}, nil)
	cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr:\n%s", err, stderr.String())
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	if got := strings.Join(names, ","); !strings.Contains(got, "greeter") || !strings.Contains(got, "calculate") {
		t.Fatalf("tools: %s", got)
	}
	r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "greeter", Arguments: map[string]any{"Name": "Dan"}})
	if err != nil {
		t.Fatal(err)
	}
	if tc, ok := r.Content[0].(*sdk.TextContent); r.IsError || !ok || tc.Text != "HELLO, DAN!" {
		t.Fatalf("greeter: %+v", r.Content[0])
	}
	r, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "calculate", Arguments: map[string]any{"Expression": "6 * 7"}})
	if err != nil {
		t.Fatal(err)
	}
	if tc, ok := r.Content[0].(*sdk.TextContent); r.IsError || !ok || !strings.Contains(tc.Text, "<Value>42</Value>") {
		t.Fatalf("calculate: %+v", r.Content[0])
	}
	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	// The calls are in the journal.
	rd, err := store.OpenReadOnly(data)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	entries, err := rd.Tail(100)
	if err != nil {
		t.Fatal(err)
	}
	var calc bool
	for _, e := range entries {
		calc = calc || (e.From == "mcp" && e.To == "calculate" && strings.Contains(string(e.Bytes), "6 * 7"))
	}
	if !calc {
		t.Fatalf("no journaled calculate call in %d entries; stderr:\n%s", len(entries), stderr.String())
	}
}
