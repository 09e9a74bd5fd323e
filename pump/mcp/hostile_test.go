package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// hostileClient speaks raw JSON-RPC to the bridge's streamable HTTP
// endpoint over loopback, the way a careless or hostile MCP client can.
type hostileClient struct {
	t       *testing.T
	url     string
	version string
	session string
}

// post sends body and returns the status and every JSON-RPC message of the
// answer (a JSON body, or the data lines of an event stream).
func (c *hostileClient) post(body string) (int, []json.RawMessage) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", c.version)
	if c.session != "" {
		req.Header.Set(sessionHeader, c.session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("post: %v", err)
	}
	defer resp.Body.Close()
	if s := resp.Header.Get(sessionHeader); s != "" {
		c.session = s
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("read answer: %v", err)
	}
	var msgs []json.RawMessage
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(bytes.NewReader(raw))
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				msgs = append(msgs, json.RawMessage(d))
			}
		}
	} else if len(bytes.TrimSpace(raw)) > 0 {
		if bytes.HasPrefix(bytes.TrimSpace(raw), []byte("[")) {
			if err := json.Unmarshal(raw, &msgs); err != nil {
				c.t.Fatalf("answer %q: %v", raw, err)
			}
		} else {
			msgs = append(msgs, json.RawMessage(raw))
		}
	}
	return resp.StatusCode, msgs
}

// replies decodes msgs by id (a batch answer may come as one array).
func (c *hostileClient) replies(msgs []json.RawMessage) map[string]reply {
	c.t.Helper()
	out := map[string]reply{}
	for _, m := range msgs {
		var batch []reply
		if json.Unmarshal(m, &batch) == nil {
			for _, r := range batch {
				out[string(r.ID)] = r
			}
			continue
		}
		var r reply
		if err := json.Unmarshal(m, &r); err != nil {
			// Not JSON-RPC (plain text): an answer no client can match.
			out["not JSON-RPC"] = reply{Error: &struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			}{Message: fmt.Sprintf("%.200q", m)}}
			continue
		}
		out[string(r.ID)] = r
	}
	return out
}

// answer is a reply as one line for the test's messages: its error, or its
// result's text and whether it is an error.
func (r reply) answer() string {
	if r.Error != nil {
		return fmt.Sprintf("error %d: %s", r.Error.Code, r.Error.Message)
	}
	if r.Result == nil {
		return "no result"
	}
	return fmt.Sprintf("isError=%v %s", r.Result.IsError, r.text())
}

// TestHostileMCPClient: an MCP client over HTTP sends a call to a tool that
// does not exist, a batch, ids out of order and the same id twice at once,
// a body over the cap and params of 5 MiB: each request gets an answer
// that says what was wrong, and the session answers a ping afterwards. The
// client never closes its session (DELETE): the bridge's Close ends it, or
// TestMain's leak check fails.
func TestHostileMCPClient(t *testing.T) {
	o := startOrganism(t)
	defer o.Shutdown(context.Background())
	b := New(o.Pump, Options{Timeout: 30 * time.Second})
	defer b.Close()
	srv := httptest.NewServer(b.HTTPHandler())
	defer srv.Close()
	c := &hostileClient{t: t, url: srv.URL, version: "2025-03-26"}
	if status, msgs := c.post(fmt.Sprintf(initLine, "2025-03-26")); status != http.StatusOK || c.session == "" {
		t.Fatalf("initialize: %d %s", status, msgs)
	}
	c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	t.Run("no such tool", func(t *testing.T) {
		_, msgs := c.post(callLine(2, "no_such_tool", `{"x":1}`))
		r := c.replies(msgs)["2"]
		if got := r.answer(); !strings.Contains(got, "no_such_tool") {
			t.Errorf("answer %q does not name the unknown tool", got)
		}
	})
	t.Run("batch", func(t *testing.T) {
		_, msgs := c.post(`[` + callLine(9, "calculate", `{"Expression":"2+2"}`) + `,{"jsonrpc":"2.0","id":4,"method":"ping"},` +
			callLine(1, "nothing_here", `{}`) + `]`)
		got := c.replies(msgs)
		if r := got["9"]; !strings.Contains(r.answer(), "<Value>4</Value>") {
			t.Errorf("calculate in a batch: %s", r.answer())
		}
		if r, ok := got["4"]; !ok || r.Error != nil {
			t.Errorf("ping in a batch: %v %s", ok, r.answer())
		}
		if r := got["1"]; !strings.Contains(r.answer(), "nothing_here") {
			t.Errorf("unknown tool in a batch: %s", r.answer())
		}
	})
	t.Run("ids out of order and repeated", func(t *testing.T) {
		ids := []string{"100", "3", `"x"`, "7", "7"}
		answers := make([]map[string]reply, len(ids))
		var wg sync.WaitGroup
		for i, id := range ids {
			wg.Go(func() {
				_, msgs := c.post(callLine(id, "calculate", fmt.Sprintf(`{"Expression":"%d*3"}`, i+1)))
				answers[i] = c.replies(msgs)
			})
		}
		wg.Wait()
		for i, id := range ids {
			r, ok := answers[i][id]
			if !ok {
				t.Errorf("id %s: no answer with its id (%v)", id, answers[i])
				continue
			}
			if want := fmt.Sprintf("<Value>%d</Value>", 3*(i+1)); !strings.Contains(r.answer(), want) &&
				!(id == "7" && r.Error != nil) {
				t.Errorf("id %s: %s, want %s", id, r.answer(), want)
			}
		}
	})
	t.Run("body over the cap", func(t *testing.T) {
		status, msgs := c.post(callLine(5, "calculate", `{"Expression":"`+strings.Repeat("1", maxHTTPBody)+`"}`))
		r := c.replies(msgs)["null"]
		if status != http.StatusRequestEntityTooLarge || r.Error == nil || r.Error.Code != codeParseError {
			t.Errorf("status %d, answer %s; want 413 with a parse error", status, r.answer())
		}
	})
	t.Run("huge params", func(t *testing.T) {
		// Within the bridge's cap (DefaultMaxLine), over the SDK's (4 MiB):
		// the call is answered as JSON-RPC with its id, not plain text.
		status, msgs := c.post(callLine(6, "calculate", `{"Expression":"`+strings.Repeat("1+", 5<<19)+`1"}`))
		got := c.replies(msgs)
		r, ok := got["6"]
		if !ok {
			t.Fatalf("5 MiB params: status %d, no answer with the call's id: %v", status, got)
		}
		if r.Error == nil && (r.Result == nil || !r.Result.IsError) {
			t.Errorf("5 MiB expression: %.200s, want an error", r.answer())
		}
		t.Logf("5 MiB expression: %.200s", r.answer())
	})
	_, msgs := c.post(`{"jsonrpc":"2.0","id":"after","method":"ping"}`)
	if r, ok := c.replies(msgs)[`"after"`]; !ok || r.Error != nil {
		t.Fatalf("the session no longer answers: %v %s", ok, r.answer())
	}
}

// TestHostileStdioLongLine: a stdio line past MaxLine is answered with a
// parse error naming the limit, and the session answers the next line.
func TestHostileStdioLongLine(t *testing.T) {
	o := startOrganism(t)
	defer o.Shutdown(context.Background())
	b := New(o.Pump, Options{Timeout: 20 * time.Second})
	defer b.Close()
	s := serveSession(t, b, StdioOptions{MaxLine: 1 << 16})
	s.send(fmt.Sprintf(initLine, "2025-06-18"), `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if r := decodeReplies(t, []string{s.next()})["1"]; r.Result == nil {
		t.Fatalf("initialize: %+v", r)
	}
	s.send(callLine(2, "calculate", `{"Expression":"`+strings.Repeat("1+", 1<<16)+`1"}`),
		`{"jsonrpc":"2.0","id":"after","method":"ping"}`)
	got := decodeReplies(t, s.rest(30*time.Second))
	var long *reply
	for k, r := range got {
		if strings.HasPrefix(k, "null") {
			long = &r
		}
	}
	if long == nil || long.Error == nil || long.Error.Code != codeParseError ||
		!strings.Contains(long.Error.Message, "longer than 65536 bytes") {
		t.Errorf("the long line was answered %+v, want a parse error naming the limit (all: %v)", long, got)
	}
	if r, ok := got[`"after"`]; !ok || r.Error != nil {
		t.Errorf("the line after it: %v %+v", ok, r)
	}
}
