package mcp

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// stuckProgress is a server transport whose progress notifications block
// until released, as a write to a client that stopped reading its stream
// does (a TCP write does not heed a context): every other message goes
// through.
type stuckProgress struct {
	sdk.Transport
	release chan struct{}
	blocked chan struct{} // closed when a progress notification first blocks
	once    sync.Once
}

func (s *stuckProgress) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := s.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return stuckConn{Connection: c, s: s}, nil
}

type stuckConn struct {
	sdk.Connection
	s *stuckProgress
}

func (c stuckConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if r, ok := msg.(*jsonrpc.Request); ok && r.Method == "notifications/progress" {
		c.s.once.Do(func() { close(c.s.blocked) })
		<-c.s.release
	}
	return c.Connection.Write(ctx, msg)
}

// TestSlowProgressClientDoesNotStallTheWork: a client that takes no
// progress notification (it stopped reading) does not stall the agent that
// writes the interim text: the conversation goes on, the call is answered,
// and the agent is free for other work — progress is best effort, the work
// is not.
func TestSlowProgressClientDoesNotStallTheWork(t *testing.T) {
	o := progressOrganism(t)
	b := New(o.Pump, Options{Timeout: 2 * time.Minute, Logger: slog.New(slog.DiscardHandler), Interim: o.WatchInterim})
	ctx, cancel := context.WithCancel(context.Background())
	st, ct := sdk.NewInMemoryTransports()
	stuck := &stuckProgress{Transport: st, release: make(chan struct{}), blocked: make(chan struct{})}
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(stuck.release) }) }
	ss, err := b.Server().Connect(ctx, stuck, nil)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- ss.Wait() }()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "stuck-client", Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		release() // a failed run leaves the write blocked
		_ = cs.Close()
		<-served
		cancel()
		b.Close()
	})

	answered := make(chan *sdk.CallToolResult, 1)
	go func() {
		p := &sdk.CallToolParams{Name: "mathbot", Arguments: map[string]any{"Text": "what is 6*7?"}}
		p.SetProgressToken("stuck")
		r, err := cs.CallTool(ctx, p)
		if err != nil {
			t.Error(err)
		}
		answered <- r
	}()
	select {
	case <-stuck.blocked:
	case <-time.After(time.Minute):
		t.Fatal("no progress notification within a minute")
	}
	select {
	case r := <-answered:
		if r != nil && (r.IsError || text(r) != "42") {
			t.Errorf("answer: isError %v %q, want 42", r.IsError, text(r))
		}
	case <-time.After(time.Minute):
		t.Fatal("the call was not answered within a minute while its client took no progress notification: " +
			"the agent waits on the client")
	}
	// The agent is free: a call without a progress token is answered too.
	r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "mathbot", Arguments: map[string]any{"Text": "and again?"}})
	if err != nil {
		t.Fatal(err)
	}
	if r.IsError || text(r) != "42" {
		t.Errorf("second answer: isError %v %q, want 42", r.IsError, text(r))
	}
}
