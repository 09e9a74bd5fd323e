package mcpclient

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// steps is a tool that reports its progress twice — with a message, then
// only how far it got — before it answers; without a progress token it
// says so.
func steps(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	token := req.Params.GetProgressToken()
	if token == nil {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "no progress token"}}}, nil
	}
	for _, p := range []*sdk.ProgressNotificationParams{
		{ProgressToken: token, Message: "halfway", Progress: 1, Total: 2},
		{ProgressToken: token, Progress: 2, Total: 2},
	} {
		if err := req.Session.NotifyProgress(ctx, p); err != nil {
			return nil, err
		}
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "done"}}}, nil
}

// TestMountRelaysProgress: a mounted tool's progress notifications reach
// Options.Progress with the calling thread, every one of them before the
// call's answer, over stdio and streamable HTTP alike.
func TestMountRelaysProgress(t *testing.T) {
	s := sdk.NewServer(&sdk.Implementation{Name: "steps", Version: "v0"}, nil)
	s.AddTool(&sdk.Tool{Name: "steps", InputSchema: map[string]any{"type": "object"}}, steps)
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(func() {
		srv.Close()
		for ss := range s.Sessions() {
			_ = ss.Close()
		}
	})
	t.Setenv(serverEnv, "1")
	for _, tc := range []struct {
		name string
		o    Options
	}{
		{"stdio", Options{Name: "st", Command: []string{os.Args[0]}, Env: []string{serverEnv}}},
		{"http", Options{Name: "st", URL: srv.URL}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var (
				mu  sync.Mutex
				got []string
			)
			tc.o.Timeout = 20 * time.Second
			tc.o.Progress = func(thread, listener, text string) {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, thread+" "+listener+" "+text)
			}
			_, tools := mount(t, tc.o)
			tool := tools["st.steps"]
			v, err := tool.Payload.Decode([]byte(`<st.steps/>`))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := tool.Handler.Handle(context.Background(), v, xmlpipe.Metadata{From: "tester", ThreadID: "thread-1"})
			if err != nil {
				t.Fatal(err)
			}
			if r := resp.(*xmlpipe.RespondResponse).Payload.(*ToolResult); r.Text != "done" {
				t.Fatalf("answer %+v", r)
			}
			mu.Lock()
			defer mu.Unlock()
			want := []string{"thread-1 st.steps halfway", "thread-1 st.steps st.steps: 2 of 2"}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("progress by the answer (-want +got):\n%s", diff)
			}
		})
	}
}
