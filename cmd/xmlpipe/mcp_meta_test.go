package main

import (
	"bufio"
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// coreTools are the meta introspection listeners as MCP tools.
var coreTools = []string{"core.list-capabilities", "core.request-example", "core.request-prompt", "core.request-schema"}

// offeredCore returns the core.* tools cs is offered, sorted.
func offeredCore(ctx context.Context, t *testing.T, cs *sdk.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tool := range res.Tools {
		if strings.HasPrefix(tool.Name, "core.") {
			out = append(out, tool.Name)
		}
	}
	slices.Sort(out)
	return out
}

// TestMCPStdioMetaTools: with the default meta: flags the stdio client —
// the operator's own, who started the process — may call every core.*
// tool it is offered.
func TestMCPStdioMetaTools(t *testing.T) {
	dir := helloDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.Command(binary, "mcp", filepath.Join(dir, "organism.yaml"))
	cmd.Dir = dir
	var stderr syncWriter
	stderr.w = &strings.Builder{}
	cmd.Stderr = &stderr
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "v0"}, nil).
		Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr:\n%s", err, stderr.String())
	}
	defer cs.Close()
	if diff := cmp.Diff(coreTools, offeredCore(ctx, t, cs)); diff != "" {
		t.Errorf("core tools offered (-want +got):\n%s", diff)
	}
	calls := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"core.list-capabilities", map[string]any{}, "<name>greeter</name>"},
		{"core.request-schema", map[string]any{"capability": "greeter"}, "<capability>greeter</capability>"},
		{"core.request-example", map[string]any{"capability": "greeter"}, "<capability>greeter</capability>"},
		{"core.request-prompt", map[string]any{"capability": "greeter"}, "<capability>greeter</capability>"},
	}
	for _, c := range calls {
		r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: c.tool, Arguments: c.args})
		if err != nil {
			t.Fatalf("%s: %v", c.tool, err)
		}
		tc, ok := r.Content[0].(*sdk.TextContent)
		if r.IsError || !ok || !strings.Contains(tc.Text, c.want) {
			t.Errorf("%s: %+v; want an answer holding %s\nstderr:\n%s", c.tool, r.Content[0], c.want, stderr.String())
		}
	}
}

// TestMCPHTTPHidesRefusedMetaTools: an HTTP client is anyone who reaches
// the address, unauthenticated for meta introspection, so with the
// default meta: flags no core.* tool — every call of which would be
// refused — is offered to it; the listeners still are.
func TestMCPHTTPHidesRefusedMetaTools(t *testing.T) {
	dir := helloDir(t)
	cmd := exec.Command(binary, "mcp", "--http", "127.0.0.1:0", filepath.Join(dir, "organism.yaml"))
	cmd.Dir = dir
	errR, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	url := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(errR)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "xmlpipe mcp: streamable HTTP on "); ok {
				url <- rest
			}
		}
	}()
	var endpoint string
	select {
	case endpoint = <-url:
	case <-time.After(60 * time.Second):
		t.Fatal("the server never said where it listens")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "v0"}, nil).
		Connect(ctx, &sdk.StreamableClientTransport{Endpoint: endpoint}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got := offeredCore(ctx, t, cs); len(got) != 0 {
		t.Errorf("core tools offered to an unauthenticated HTTP client: %v", got)
	}
	r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "greeter", Arguments: map[string]any{"Name": "Dan"}})
	if err != nil {
		t.Fatal(err)
	}
	if tc, ok := r.Content[0].(*sdk.TextContent); r.IsError || !ok || tc.Text != "HELLO, DAN!" {
		t.Fatalf("greeter: %+v", r.Content[0])
	}
	// The README's word: /mcp, which many clients assume, is the same
	// server as the root the startup line names.
	cs2, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "v0"}, nil).
		Connect(ctx, &sdk.StreamableClientTransport{Endpoint: endpoint + "mcp"}, nil)
	if err != nil {
		t.Fatalf("connect to %smcp: %v", endpoint, err)
	}
	defer cs2.Close()
	if _, err := cs2.ListTools(ctx, nil); err != nil {
		t.Fatalf("tools/list at %smcp: %v", endpoint, err)
	}
}
