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
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// Slow is the payload of a listener that answers when released or when its
// context ends.
type Slow struct {
	Label string
}

// Bounded has constraints only the JSON Schema keywords carry.
type Bounded struct {
	Limit *int64   `xml:",omitempty" jsonschema:"{\"minimum\":0,\"maximum\":100,\"default\":10}"`
	Tags  []string `xml:",omitempty" jsonschema:"{\"maxItems\":2}"`
	Exact *bool    `xml:",omitempty"`
}

// BoundedEcho answers a Bounded with what it received.
type BoundedEcho struct {
	Got string
}

// slowListener answers once release is closed (or its context ends); started
// is told each time a call begins.
type slowListener struct {
	release chan struct{}
	started chan string
}

func newSlow() *slowListener {
	return &slowListener{release: make(chan struct{}), started: make(chan string, 16)}
}

func (s *slowListener) listener(t *testing.T) pump.Listener {
	pt, err := xmlpipe.PayloadTypeOf[Slow]()
	if err != nil {
		t.Fatal(err)
	}
	return pump.Listener{Name: "slow", Description: "answers when released", Payload: pt,
		Handler: xmlpipe.Typed(func(ctx context.Context, p *Slow, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
			s.started <- p.Label
			select {
			case <-s.release:
			case <-ctx.Done():
			}
			return xmlpipe.Respond(&BoundedEcho{Got: "released " + p.Label}), nil
		})}
}

func boundedListener(t *testing.T) pump.Listener {
	pt, err := xmlpipe.PayloadTypeOf[Bounded]()
	if err != nil {
		t.Fatal(err)
	}
	return pump.Listener{Name: "bounded", Description: "echoes its arguments", Payload: pt,
		Handler: xmlpipe.Typed(func(_ context.Context, p *Bounded, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
			got := "limit="
			if p.Limit != nil {
				got += fmt.Sprint(*p.Limit)
			}
			got += " exact="
			if p.Exact != nil {
				got += fmt.Sprint(*p.Exact)
			}
			return xmlpipe.Respond(&BoundedEcho{Got: got}), nil
		})}
}

// startOrganism runs the test organism with extra listeners.
func startOrganism(t testing.TB, extra ...pump.Listener) *organism.Organism {
	t.Helper()
	path := filepath.Join(t.TempDir(), "organism.yaml")
	if err := os.WriteFile(path, []byte(testOrganism), 0o600); err != nil {
		t.Fatal(err)
	}
	o, err := organism.Load(path, organism.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range extra {
		if err := o.Pump.Register(l); err != nil {
			t.Fatal(err)
		}
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	return o
}

// stdioSession is a ServeStdio session over pipes.
type stdioSession struct {
	t      *testing.T
	in     *io.PipeWriter
	lines  chan string // every line the server wrote
	served chan error
}

func serveSession(t *testing.T, b *Bridge, opts StdioOptions) *stdioSession {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &stdioSession{t: t, in: inW, lines: make(chan string, 256), served: make(chan error, 1)}
	go func() {
		err := b.ServeStdio(context.Background(), inR, outW, opts)
		outW.Close()
		s.served <- err
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
	}()
	t.Cleanup(func() { inW.Close() })
	return s
}

func (s *stdioSession) send(lines ...string) {
	s.t.Helper()
	for _, l := range lines {
		if _, err := io.WriteString(s.in, l+"\n"); err != nil {
			s.t.Fatal(err)
		}
	}
}

// next returns the next line the server wrote (30 s at most).
func (s *stdioSession) next() string {
	s.t.Helper()
	select {
	case l, ok := <-s.lines:
		if !ok {
			s.t.Fatal("the server's output ended")
		}
		return l
	case <-time.After(30 * time.Second):
		s.t.Fatal("no answer within 30s")
	}
	return ""
}

// rest closes the input and returns every line still written, checking the
// session ends promptly.
func (s *stdioSession) rest(within time.Duration) []string {
	s.t.Helper()
	s.in.Close()
	var out []string
	deadline := time.After(within)
	for {
		select {
		case l, ok := <-s.lines:
			if !ok {
				select {
				case err := <-s.served:
					if err != nil {
						s.t.Errorf("ServeStdio: %v", err)
					}
				case <-deadline:
					s.t.Fatalf("ServeStdio did not return within %v", within)
				}
				return out
			}
			out = append(out, l)
		case <-deadline:
			s.t.Fatalf("the session did not end within %v after the input did; got %q", within, out)
		}
	}
}

// reply is a decoded JSON-RPC response.
type reply struct {
	ID     json.RawMessage `json:"id"`
	Result *struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		ProtocolVersion string `json:"protocolVersion"`
		Tools           []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (r reply) text() string {
	if r.Result == nil || len(r.Result.Content) == 0 {
		return ""
	}
	return r.Result.Content[0].Text
}

func decodeReplies(t *testing.T, lines []string) map[string]reply {
	t.Helper()
	out := map[string]reply{}
	for _, l := range lines {
		if strings.HasPrefix(l, "[") {
			var batch []reply
			if err := json.Unmarshal([]byte(l), &batch); err != nil {
				t.Fatalf("bad batch answer %q: %v", l, err)
			}
			for _, r := range batch {
				out["batch:"+string(r.ID)] = r
			}
			continue
		}
		var r reply
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("bad answer %q: %v", l, err)
		}
		key := string(r.ID)
		if _, dup := out[key]; dup && key != "null" {
			t.Fatalf("two answers for id %s", key)
		}
		if key == "null" {
			key = fmt.Sprintf("null%d", len(out))
		}
		out[key] = r
	}
	return out
}

const initLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"%s","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`

func callLine(id any, tool string, args string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args)
}

// TestServeStdioAnswersEveryLine: malformed lines, invalid requests and a
// batch on a 2025-06-18 session are answered with JSON-RPC errors, and the
// session goes on to answer every request.
func TestServeStdioAnswersEveryLine(t *testing.T) {
	o := startOrganism(t, boundedListener(t))
	defer o.Shutdown(context.Background())
	b := New(o.Pump, Options{Timeout: 20 * time.Second})
	defer b.Close()
	s := serveSession(t, b, StdioOptions{})
	s.send(fmt.Sprintf(initLine, "2025-06-18"), `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if r := decodeReplies(t, []string{s.next()})["1"]; r.Result == nil || r.Result.ProtocolVersion != "2025-06-18" {
		t.Fatalf("initialize: %+v", r)
	}
	s.send(
		`this is not JSON`,
		`{"foo":1}`,
		`{"jsonrpc":"1.0","id":3,"method":"tools/list"}`,
		`[{"jsonrpc":"2.0","id":4,"method":"tools/list"}]`,
		`[]`,
		`{"jsonrpc":"2.0","id":{"x":1},"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/list","params":"x"}`,
		"{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":{\"name\":\"greeter\",\"arguments\":{\"Name\":\"D\xffn\"}}}",
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"greeter","arguments":{"Name":"D\ud800n"}}}`,
		callLine(8, "greeter", `{"Name":5}`),
		callLine(9, "bounded", `{"Limit":-1}`),
		callLine(10, "bounded", `{"Tags":["a","b","c"]}`),
		callLine(11, "bounded", `{"Limit":0,"Exact":false}`),
		callLine(12, "bounded", `{}`),
		`{"jsonrpc":"2.0","id":13,"method":"tools/list"}`,
		callLine(14, "greeter", `{"Name":"Dan"}`),
		`{"jsonrpc":"2.0","id":"s","method":"ping"}`,
	)
	got := decodeReplies(t, s.rest(30*time.Second))
	wantErr := func(key string, code int, msg string) {
		t.Helper()
		r, ok := got[key]
		if !ok {
			for k, v := range got {
				if strings.HasPrefix(k, "null") && v.Error != nil && v.Error.Code == code && strings.Contains(v.Error.Message, msg) {
					delete(got, k)
					return
				}
			}
			t.Errorf("no answer %s %d %q among %v", key, code, msg, got)
			return
		}
		if r.Error == nil || r.Error.Code != code || !strings.Contains(r.Error.Message, msg) {
			t.Errorf("id %s: %+v, want error %d %q", key, r.Error, code, msg)
		}
	}
	wantTool := func(id string, isError bool, text string) {
		t.Helper()
		r := got[id]
		if r.Result == nil || r.Result.IsError != isError || !strings.Contains(r.text(), text) {
			t.Errorf("id %s: %+v %q, want isError=%v %q", id, r.Error, r.text(), isError, text)
		}
	}
	wantErr("null", -32700, "Parse error: invalid character")
	wantErr("null", -32600, `"jsonrpc" must be "2.0"`)
	wantErr("3", -32600, `"jsonrpc" must be "2.0"`)
	wantErr("null", -32600, "batches are not allowed in protocol version 2025-06-18")
	wantErr("null", -32600, "empty batch")
	wantErr("null", -32600, `"id" must be a string or an integer`)
	wantErr("null", -32600, `"id" 1.5`)
	wantErr("5", -32600, `"params" must be an object or an array`)
	wantErr("6", -32700, "not valid UTF-8")
	wantErr("7", -32700, "unpaired surrogate")
	wantTool("8", true, "Name: want a string, got the number 5")
	wantTool("9", true, "/properties/Limit: minimum: -1 is less than 0")
	if strings.Contains(got["9"].text(), "/1") || strings.Contains(got["9"].text(), ".000") {
		t.Errorf("numbers in the schema error: %q", got["9"].text())
	}
	wantTool("10", true, "/properties/Tags: maxItems")
	wantTool("11", false, "limit=0 exact=false")
	wantTool("12", false, "limit= exact=")
	wantTool("14", false, "HELLO, DAN!")
	if r := got["13"]; r.Result == nil || len(r.Result.Tools) == 0 {
		t.Errorf("tools/list after the bad lines: %+v", r)
	}
	if r := got[`"s"`]; r.Result == nil {
		t.Errorf("ping: %+v", r)
	}
	for _, tool := range got["13"].Result.Tools {
		if tool.Name == "bounded" && !strings.Contains(string(tool.InputSchema), `"Limit":{"default":10,"maximum":100,"minimum":0,"type":"integer"}`) {
			t.Errorf("bounded's schema: %s", tool.InputSchema)
		}
	}
}

// TestServeStdioBatch: before 2025-06-18 a batch is answered with one array,
// invalid elements included.
func TestServeStdioBatch(t *testing.T) {
	o := startOrganism(t)
	defer o.Shutdown(context.Background())
	b := New(o.Pump, Options{Timeout: 20 * time.Second})
	defer b.Close()
	s := serveSession(t, b, StdioOptions{})
	s.send(fmt.Sprintf(initLine, "2025-03-26"))
	if r := decodeReplies(t, []string{s.next()})["1"]; r.Result == nil || r.Result.ProtocolVersion != "2025-03-26" {
		t.Fatalf("initialize: %+v", r)
	}
	s.send(`[{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":2,"method":"ping"},` +
		callLine(3, "greeter", `{"Name":"Ann"}`) + `,{"jsonrpc":"2.0","id":4}]`)
	line := s.next()
	if !strings.HasPrefix(line, "[") {
		t.Fatalf("batch answer: %s", line)
	}
	got := decodeReplies(t, []string{line})
	if len(got) != 3 || got["batch:2"].Result == nil || !strings.Contains(got["batch:3"].text(), "HELLO, ANN!") ||
		got["batch:4"].Error == nil || got["batch:4"].Error.Code != -32600 {
		t.Fatalf("batch answers: %s", line)
	}
	if rest := s.rest(30 * time.Second); len(rest) != 0 {
		t.Fatalf("more output: %q", rest)
	}
}

// TestServeStdioEOF: requests piped in followed by the end of input are all
// answered before the session ends; a call still running after the drain is
// cancelled and answered with a tool error, promptly.
func TestServeStdioEOF(t *testing.T) {
	slow := newSlow()
	o := startOrganism(t, slow.listener(t))
	defer o.Shutdown(context.Background())
	defer close(slow.release)
	b := New(o.Pump, Options{Timeout: time.Minute})
	defer b.Close()

	// initialize + tools/list + tools/call, then EOF: every answer.
	in := fmt.Sprintf(initLine, "2025-06-18") + "\n" + `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\n" + callLine(3, "greeter", `{"Name":"Dan"}`) + "\n"
	var out bytes.Buffer
	start := time.Now()
	if err := b.ServeStdio(context.Background(), strings.NewReader(in), &out, StdioOptions{}); err != nil {
		t.Fatal(err)
	}
	got := decodeReplies(t, strings.Split(strings.TrimSpace(out.String()), "\n"))
	if len(got) != 3 || got["1"].Result == nil || got["2"].Result == nil || got["3"].text() != "HELLO, DAN!" {
		t.Fatalf("piped session answered %d of 3: %s", len(got), out.String())
	}
	t.Logf("piped session: %v", time.Since(start))

	// A call that cannot finish: cancelled after the drain, still answered.
	s := serveSession(t, b, StdioOptions{Drain: 200 * time.Millisecond})
	s.send(fmt.Sprintf(initLine, "2025-06-18"), callLine(2, "slow", `{"Label":"a"}`))
	s.next() // initialize
	select {
	case <-slow.started:
	case <-time.After(30 * time.Second):
		t.Fatal("the slow call never started")
	}
	start = time.Now()
	got = decodeReplies(t, s.rest(30*time.Second))
	if r := got["2"]; r.Result == nil || !r.Result.IsError || !strings.Contains(r.text(), "input ended") {
		t.Fatalf("cancelled call: %+v %q", r, r.text())
	}
	t.Logf("session ended %v after the input", time.Since(start))
}

// TestServeStdioCancel: notifications/cancelled kills the call's
// conversation and its answer is not sent; the session goes on.
func TestServeStdioCancel(t *testing.T) {
	slow := newSlow()
	o := startOrganism(t, slow.listener(t))
	defer o.Shutdown(context.Background())
	var once sync.Once
	release := func() { once.Do(func() { close(slow.release) }) }
	defer release()
	dead := make(chan string, 16)
	unsub := o.Pump.Subscribe(pump.OutletFunc(func(e pump.Event) {
		if e.Kind == pump.EventDeadLetter {
			dead <- e.Error
		}
	}))
	defer unsub()
	b := New(o.Pump, Options{Timeout: time.Minute})
	defer b.Close()
	s := serveSession(t, b, StdioOptions{})
	s.send(fmt.Sprintf(initLine, "2025-06-18"), callLine(2, "slow", `{"Label":"a"}`))
	s.next()
	select {
	case <-slow.started:
	case <-time.After(30 * time.Second):
		t.Fatal("the slow call never started")
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"user"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	if r := decodeReplies(t, []string{s.next()}); r["3"].Result == nil {
		t.Fatalf("ping after the cancel: %v", r)
	}
	rest := s.rest(30 * time.Second)
	if len(rest) != 0 {
		t.Fatalf("the cancelled call was answered: %q", rest)
	}
	// The conversation was killed: whatever its handler still says is
	// dropped (with Kill cancelling handler contexts it says it at once).
	release()
	select {
	case why := <-dead:
		t.Logf("dropped: %s", why)
	case <-time.After(30 * time.Second):
		t.Fatal("the cancelled call's conversation was not killed")
	}
}

// TestHTTPHandlerRefusesMalformed: the streamable HTTP transport answers
// bad bodies with JSON-RPC errors.
func TestHTTPHandlerRefusesMalformed(t *testing.T) {
	o := startOrganism(t)
	defer o.Shutdown(context.Background())
	b := New(o.Pump, Options{Timeout: 20 * time.Second})
	defer b.Close()
	srv := httptest.NewServer(b.HTTPHandler())
	defer srv.Close()
	for _, tc := range []struct {
		body, version string
		code          int
		msg, id       string
	}{
		{`not json`, "", -32700, "Parse error", "null"},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"x\":\"\xff\"}}", "", -32700, "UTF-8", "1"},
		{`{"foo":1}`, "", -32600, `"jsonrpc" must be "2.0"`, "null"},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, "2025-06-18", -32600, "batches are not allowed", "null"},
	} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(tc.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tc.version != "" {
			req.Header.Set("Mcp-Protocol-Version", tc.version)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var r reply
		err = json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusBadRequest || r.Error == nil || r.Error.Code != tc.code ||
			!strings.Contains(r.Error.Message, tc.msg) || string(r.ID) != tc.id {
			t.Errorf("%q: %d %+v (%v), want 400 %d %q", tc.body, resp.StatusCode, r.Error, err, tc.code, tc.msg)
		}
	}
}
