package mcp

import (
	"context"
	"slices"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRefusedListenersAreNotTools: a listener Options.Refused names is not
// offered as a tool, and a call naming it is an unknown tool; the others
// are served as before.
func TestRefusedListenersAreNotTools(t *testing.T) {
	o := startOrganism(t)
	b := New(o.Pump, Options{Timeout: 20 * time.Second, Refused: func(name string) bool { return name == "shouter" }})
	ctx, cancel := context.WithCancel(context.Background())
	st, ct := sdk.NewInMemoryTransports()
	ss, err := b.Server().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- ss.Wait() }()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test-client", Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		<-served
		cancel()
		b.Close()
		if err := o.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	if slices.Contains(names, "shouter") || !slices.Contains(names, "greeter") {
		t.Fatalf("tools %v: want greeter, not the refused shouter", names)
	}
	r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "shouter", Arguments: map[string]any{}})
	if err == nil && !r.IsError {
		t.Fatalf("the refused shouter was called: %+v", r)
	}
}
