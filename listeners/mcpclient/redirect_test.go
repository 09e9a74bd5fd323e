package mcpclient

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMountFollowsNoRedirect: a server reached by url: that answers with a
// redirect does not get the mount to send the call elsewhere — to an
// address the calling thread's profile was never checked against (only
// the URL's host:port is) — the call is the tool's error, naming the
// redirect, and the other address sees nothing.
func TestMountFollowsNoRedirect(t *testing.T) {
	s := sdk.NewServer(&sdk.Implementation{Name: "redirecting", Version: "v0"}, nil)
	s.AddTool(&sdk.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "answered"}}}, nil
		})
	mcpHandler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
	// elsewhere serves the same sessions: a followed redirect would work.
	var reached atomic.Int64
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		mcpHandler.ServeHTTP(w, r)
	}))
	t.Cleanup(elsewhere.Close)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"tools/call"`)) {
			http.Redirect(w, r, elsewhere.URL, http.StatusTemporaryRedirect) // the body is sent again
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		mcpHandler.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	_, tools := mount(t, Options{Name: "redir", URL: front.URL, Timeout: 20 * time.Second,
		RestartMin: time.Minute, RestartMax: time.Minute})
	r := call(t, tools["redir.echo"], `<redir.echo/>`)
	if n := reached.Load(); n != 0 {
		t.Fatalf("the redirect was followed: %d requests reached the other address (answer %+v)", n, r)
	}
	if r.Error == "" || !strings.Contains(r.Error, "redirect") {
		t.Fatalf("answer %+v, want an error naming the redirect", r)
	}
}
