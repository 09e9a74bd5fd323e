package mcp

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/xml-pipeline/xmlpipe/pump"
)

// TestHTTPClientGoneStopsTheCall: over streamable HTTP, a client that
// disconnects mid-call (its TCP connection drops) or closes its session
// (DELETE) stops the call — its conversation is killed at once, not left
// running until the call timeout — and the server goes on serving.
func TestHTTPClientGoneStopsTheCall(t *testing.T) {
	for _, tc := range []struct {
		name string
		gone func(srv *httptest.Server, cs *sdk.ClientSession)
	}{
		{"connection dropped", func(srv *httptest.Server, _ *sdk.ClientSession) { srv.CloseClientConnections() }},
		// The SDK's own client closes only once its calls end; another
		// client may DELETE its session at any time.
		{"session closed", func(srv *httptest.Server, cs *sdk.ClientSession) {
			req, err := http.NewRequest(http.MethodDelete, srv.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Mcp-Session-Id", cs.ID())
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNoContent {
				t.Errorf("DELETE: %s", resp.Status)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slow := newSlow()
			o := startOrganism(t, slow.listener(t))
			defer o.Shutdown(context.Background())
			dead := make(chan string, 16)
			unsub := o.Pump.Subscribe(pump.OutletFunc(func(e pump.Event) {
				if e.Kind == pump.EventDeadLetter {
					dead <- e.Error
				}
			}))
			defer unsub()
			// A timeout far beyond the test's deadline: only the
			// disconnect can stop the call in time.
			b := New(o.Pump, Options{Timeout: time.Hour})
			defer b.Close()
			srv := httptest.NewServer(b.HTTPHandler())
			defer srv.Close()
			ctx := context.Background()
			connect := func() *sdk.ClientSession {
				cs, err := sdk.NewClient(&sdk.Implementation{Name: "c", Version: "v0"}, nil).
					Connect(ctx, &sdk.StreamableClientTransport{Endpoint: srv.URL}, nil)
				if err != nil {
					t.Fatal(err)
				}
				return cs
			}
			cs := connect()
			defer cs.Close()
			callCtx, cancel := context.WithCancel(ctx)
			defer cancel()
			answered := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(callCtx, &sdk.CallToolParams{Name: "slow", Arguments: map[string]any{"Label": "a"}})
				answered <- err
			}()
			select {
			case <-slow.started:
			case <-time.After(30 * time.Second):
				t.Fatal("the slow call never started")
			}
			tc.gone(srv, cs)
			select {
			case why := <-dead:
				if !strings.Contains(why, "conversation killed") {
					t.Errorf("dropped for %q, want the conversation killed", why)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the call of a client that went away was left running")
			}
			cancel()
			<-answered
			// The server goes on: a new client is served.
			cs2 := connect()
			defer cs2.Close()
			r, err := cs2.CallTool(ctx, &sdk.CallToolParams{Name: "calculate", Arguments: map[string]any{"Expression": "6*7"}})
			if err != nil {
				t.Fatal(err)
			}
			if r.IsError || !strings.Contains(text(r), "<Value>42</Value>") {
				t.Fatalf("calculate after the disconnect: %v %q", r.IsError, text(r))
			}
		})
	}
}

// TestHTTPIdleSessionClosed: a client that initializes a streamable HTTP
// session and vanishes without closing it (no DELETE) does not hold the
// session — and its goroutines — for good: it is closed once idle for
// Options.SessionIdle.
func TestHTTPIdleSessionClosed(t *testing.T) {
	o := startOrganism(t)
	defer o.Shutdown(context.Background())
	b := New(o.Pump, Options{Timeout: time.Minute, SessionIdle: 100 * time.Millisecond})
	defer b.Close()
	server := b.Server()
	srv := httptest.NewServer(b.httpHandler(server))
	defer srv.Close()
	req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize: %s, session %q", resp.Status, resp.Header.Get("Mcp-Session-Id"))
	}
	var sessions []*sdk.ServerSession
	for ss := range server.Sessions() {
		sessions = append(sessions, ss)
	}
	if len(sessions) != 1 {
		t.Fatalf("%d server sessions, want 1", len(sessions))
	}
	closed := make(chan error, 1)
	go func() { closed <- sessions[0].Wait() }()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		_ = sessions[0].Close()
		t.Fatal("an abandoned session was still open 30s after it went idle")
	}
}
