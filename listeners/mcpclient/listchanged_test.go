package mcpclient

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMountNoticesAChangedToolList: a server that says its tool list
// changed (notifications/tools/list_changed) and offers the same list
// leaves the mount as it was; one that offers another marks it Stale (a
// reload mounts it afresh) and the log names the tools added and removed,
// where before the notification went unnoticed.
func TestMountNoticesAChangedToolList(t *testing.T) {
	s := sdk.NewServer(&sdk.Implementation{Name: "changing", Version: "v0"}, nil)
	empty := map[string]any{"type": "object"}
	answer := func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil
	}
	s.AddTool(&sdk.Tool{Name: "old", Description: "the first", InputSchema: empty}, answer)
	s.AddTool(&sdk.Tool{Name: "kept", InputSchema: empty}, answer)
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(func() {
		srv.Close()
		for ss := range s.Sessions() {
			_ = ss.Close()
		}
	})
	var logs lockedBuffer
	m, _ := mount(t, Options{Name: "ch", URL: srv.URL, Timeout: 20 * time.Second,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	waitLog := func(what string) string {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			for line := range strings.Lines(logs.String()) {
				if strings.Contains(line, what) {
					return line
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %q logged within a minute; the log:\n%s", what, logs.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	// The same tool again: the server notifies, the list is the same.
	s.AddTool(&sdk.Tool{Name: "old", Description: "the first", InputSchema: empty}, answer)
	// A tool added then removed, so that the log shows the second
	// notification was handled (each one lists the tools).
	s.AddTool(&sdk.Tool{Name: "probe", InputSchema: empty}, answer)
	waitLog("added=probe")
	if !m.Stale() {
		t.Error("not stale with a tool added")
	}
	if strings.Contains(logs.String(), "removed=old") {
		t.Errorf("a tool listed again was taken as removed:\n%s", logs.String())
	}
	s.RemoveTools("probe", "old")
	s.AddTool(&sdk.Tool{Name: "new", InputSchema: empty}, answer)
	line := waitLog("added=new")
	if !strings.Contains(line, "removed=old") || !strings.Contains(line, "reload") {
		t.Errorf("the log line does not name the removed tool and the reload: %s", line)
	}
}
