package mcp

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestToolListFollowsTheRoutingTable: a listener added while a client is
// connected (an OOB registration, a federation import) is offered to it,
// with a list_changed notification, and can be called; one removed is
// withdrawn, so a call to it is an unknown tool.
func TestToolListFollowsTheRoutingTable(t *testing.T) {
	o := startOrganism(t)
	b := New(o.Pump, Options{Timeout: 20 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	st, ct := sdk.NewInMemoryTransports()
	ss, err := b.Server().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- ss.Wait() }()
	changed := make(chan struct{}, 16)
	client := sdk.NewClient(&sdk.Implementation{Name: "test-client", Version: "v0"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
	})
	cs, err := client.Connect(ctx, ct, nil)
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
	names := func() []string {
		t.Helper()
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tool := range res.Tools {
			out = append(out, tool.Name)
		}
		return out
	}
	waitChanged := func(what string) {
		t.Helper()
		select {
		case <-changed:
		case <-time.After(time.Minute):
			t.Fatalf("no tools/list_changed notification after %s", what)
		}
	}
	if slices.Contains(names(), "bounded") {
		t.Fatal("bounded listed before it was added")
	}

	if err := o.Pump.AddListener(boundedListener(t)); err != nil {
		t.Fatal(err)
	}
	waitChanged("adding a listener")
	if !slices.Contains(names(), "bounded") {
		t.Fatalf("the added listener is not offered: %v", names())
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "bounded", Arguments: map[string]any{"Limit": 7}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || !strings.Contains(text(res), "limit=7") {
		t.Fatalf("call of the added tool: error %v, %q", res.IsError, text(res))
	}

	if err := o.Pump.RemoveListener(ctx, "bounded"); err != nil {
		t.Fatal(err)
	}
	waitChanged("removing a listener")
	if slices.Contains(names(), "bounded") {
		t.Fatalf("the removed listener is still offered: %v", names())
	}
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "bounded", Arguments: map[string]any{"Limit": 7}})
	if err == nil && !res.IsError {
		t.Fatalf("a removed tool answered: %q", text(res))
	}
}
