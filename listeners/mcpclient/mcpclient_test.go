package mcpclient

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/xml-pipeline/xmlpipe/gen"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/codec"

	"go.uber.org/goleak"
)

// serverEnv makes the test binary an MCP server on stdio (see TestMain).
const serverEnv = "XMLPIPE_MCPCLIENT_TEST_SERVER"

func TestMain(m *testing.M) {
	switch os.Getenv(serverEnv) {
	case "1":
		stdioServer()
		return
	case "dup":
		dupServer()
		return
	case "noisy":
		noisyServer()
		return
	}
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}

// stdioServer serves "pid" (its process id), "exit" (exits at once) and
// "calls" (how many tool calls it has received, this one included).
func stdioServer() {
	s := sdk.NewServer(&sdk.Implementation{Name: "pid-server", Version: "v0"}, nil)
	empty := map[string]any{"type": "object"}
	var calls atomic.Int64
	s.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method == "tools/call" {
				calls.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	s.AddTool(&sdk.Tool{Name: "calls", InputSchema: empty}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strconv.FormatInt(calls.Load(), 10)}}}, nil
	})
	s.AddTool(&sdk.Tool{Name: "pid", InputSchema: empty}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strconv.Itoa(os.Getpid())}}}, nil
	})
	s.AddTool(&sdk.Tool{Name: "exit", InputSchema: empty}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		os.Exit(3)
		return nil, nil
	})
	s.AddTool(&sdk.Tool{Name: "steps", InputSchema: empty}, steps)
	_ = s.Run(context.Background(), &sdk.StdioTransport{})
	os.Exit(0)
}

// searchSchema exercises every derivation rule.
const searchSchema = `{"type":"object","required":["query","tags"],"properties":{
	"query":{"type":"string","description":"what to look for"},
	"limit":{"type":"integer","default":10,"minimum":0},
	"exact":{"type":"boolean"},
	"mode":{"type":"string","enum":["fast","deep"]},
	"tags":{"type":"array","items":{"type":"string"},"minItems":1},
	"since":{"type":["string","null"]},
	"filter":{"type":"object","additionalProperties":true},
	"where":{"type":"object","properties":{"lat":{"type":"number"},"lon":{"type":"number"}},"required":["lat","lon"],"additionalProperties":false},
	"opts":{"type":"array","items":{"type":"object","properties":{"k":{"type":"string"},"v":{"type":"integer"}},"additionalProperties":false}},
	"loose":{"type":"object","properties":{"a":{"type":"string"}}},
	"any":{"oneOf":[{"type":"string"},{"type":"integer"}]}
}}`

// recorder is an in-process MCP server over loopback HTTP whose "search"
// tool records the arguments it receives and whose "picture" answers with
// every kind of content.
type recorder struct {
	mu   sync.Mutex
	args []json.RawMessage
}

func (r *recorder) last() json.RawMessage {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.args) == 0 {
		return nil
	}
	return r.args[len(r.args)-1]
}

func externalServer(t *testing.T) (*recorder, string) {
	t.Helper()
	rec := &recorder{}
	s := sdk.NewServer(&sdk.Implementation{Name: "external", Version: "v0"}, nil)
	var schema map[string]any
	if err := json.Unmarshal([]byte(searchSchema), &schema); err != nil {
		t.Fatal(err)
	}
	s.AddTool(&sdk.Tool{Name: "search", Description: "searches", InputSchema: schema},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			rec.mu.Lock()
			rec.args = append(rec.args, append(json.RawMessage(nil), req.Params.Arguments...))
			rec.mu.Unlock()
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil
		})
	size := int64(42)
	s.AddTool(&sdk.Tool{Name: "picture", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.TextContent{Text: "a red dot"},
				&sdk.ImageContent{MIMEType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}},
				&sdk.AudioContent{MIMEType: "audio/wav", Data: []byte("RIFF")},
				&sdk.ResourceLink{URI: "file:///dot.png", Name: "dot.png", MIMEType: "image/png", Size: &size},
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "mem://note", MIMEType: "text/plain", Text: "hi"}},
				&sdk.ImageContent{MIMEType: "image/raw", Data: make([]byte, maxBinary+1)},
			}, StructuredContent: map[string]any{"dots": 1}}, nil
		})
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return rec, srv.URL
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
}

func mount(t *testing.T, o Options) (*Mount, map[string]Tool) {
	t.Helper()
	if o.Logger == nil {
		o.Logger = quietLogger()
	}
	m, err := Connect(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	byName := map[string]Tool{}
	for _, tool := range m.Tools() {
		byName[tool.Listener] = tool
	}
	return m, byName
}

// call decodes payload XML as the pump would and runs the tool's handler.
func call(t *testing.T, tool Tool, payload string) *ToolResult {
	t.Helper()
	v, err := tool.Payload.Decode([]byte(payload))
	if err != nil {
		t.Fatalf("decode %s: %v", payload, err)
	}
	resp, err := tool.Handler.Handle(context.Background(), v, xmlpipe.Metadata{From: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	r, ok := resp.(*xmlpipe.RespondResponse)
	if !ok {
		t.Fatalf("response %T", resp)
	}
	return r.Payload.(*ToolResult)
}

// TestMountArgumentsAsSent: what reaches the server is exactly what the
// payload holds — an optional 0/false/"" is sent, an absent field is not,
// arrays and objects are native JSON — whether the payload came as XML or
// through the JSON form (REST, MCP, console).
func TestMountArgumentsAsSent(t *testing.T) {
	rec, url := externalServer(t)
	_, tools := mount(t, Options{Name: "ext", URL: url, Timeout: 10 * time.Second})
	search := tools["ext.search"]
	if search.Payload == nil {
		t.Fatalf("ext.search not mounted: %v", tools)
	}
	same := func(got json.RawMessage, want string) {
		t.Helper()
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("server got %s: %v", got, err)
		}
		if err := json.Unmarshal([]byte(want), &w); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(w, g); diff != "" {
			t.Errorf("server got %s\nwant %s\n(-want +got) %s", got, want, diff)
		}
	}
	for _, tc := range []struct{ xml, want string }{
		{`<ext.search><limit>0</limit><exact>false</exact><query></query><tags>a</tags></ext.search>`,
			`{"query":"","limit":0,"exact":false,"tags":["a"]}`},
		{`<ext.search><query>q</query></ext.search>`, `{"query":"q","tags":[]}`},
		{`<ext.search><filter>{"k":[1,2],"n":null}</filter><opts><k>x</k></opts><opts><v>2</v></opts>` +
			`<query>q</query><since></since><tags>a</tags><tags>b</tags><where><lat>1.5</lat><lon>-2</lon></where><any>7</any></ext.search>`,
			`{"query":"q","tags":["a","b"],"filter":{"k":[1,2],"n":null},"opts":[{"k":"x"},{"v":2}],"since":"","where":{"lat":1.5,"lon":-2},"any":7}`},
	} {
		if r := call(t, search, tc.xml); r.Error != "" || r.Text != "ok" {
			t.Fatalf("%s: %+v", tc.xml, r)
		}
		same(rec.last(), tc.want)
	}
	// The JSON form: native arrays and objects in, the same JSON out.
	in := `{"query":"q","limit":0,"exact":false,"mode":"deep","tags":["x"],"since":null,"filter":{"a":{"b":[true]}},"where":{"lat":0,"lon":0},"any":"s","loose":{"a":"x","extra":1}}`
	body, err := codec.AppendJSON(nil, search.Payload.Model(), []byte(in), codec.JSONOptions{})
	if err != nil {
		t.Fatal(err)
	}
	call(t, search, string(body))
	same(rec.last(), `{"query":"q","limit":0,"exact":false,"mode":"deep","tags":["x"],"filter":{"a":{"b":[true]}},"where":{"lat":0,"lon":0},"any":"s","loose":{"a":"x","extra":1}}`)
	// Types are not coerced on the way in.
	if _, err := codec.AppendJSON(nil, search.Payload.Model(), []byte(`{"query":"q","tags":["x"],"limit":"5"}`), codec.JSONOptions{}); err == nil ||
		!strings.Contains(err.Error(), `limit: want an integer, got the string "5"`) {
		t.Errorf("coerced: %v", err)
	}
}

// TestMountSchemaSurvives: the derived payload's JSON Schema (what `xmlpipe
// mcp` offers again) keeps the server's keywords; nullable is optional.
func TestMountSchemaSurvives(t *testing.T) {
	_, url := externalServer(t)
	_, tools := mount(t, Options{Name: "ext", URL: url, Timeout: 10 * time.Second})
	model := tools["ext.search"].Payload.Model()
	s := gen.JSONSchema(model)
	got, _ := json.Marshal(s)
	var orig map[string]any
	if err := json.Unmarshal([]byte(searchSchema), &orig); err != nil {
		t.Fatal(err)
	}
	props := s["properties"].(map[string]any)
	for name, want := range orig["properties"].(map[string]any) {
		if diff := cmp.Diff(want, normalize(t, props[name])); diff != "" {
			t.Errorf("property %s re-exported differently (-server +ours):\n%s", name, diff)
		}
	}
	if req := fmt.Sprint(s["required"]); req != "[query tags]" {
		t.Errorf("required: %s in %s", req, got)
	}
	// Nullable and optional fields are pointers (presence survives decoding);
	// arrays and objects with properties are native fields.
	kinds := map[string]string{}
	for _, f := range model.Fields {
		kinds[f.Name] = fmt.Sprintf("%v ptr=%v rep=%v json=%v", f.Kind, f.Pointer, f.Repeated, f.JSON)
	}
	for name, want := range map[string]string{
		"query":  "xs:string ptr=false rep=false json=false",
		"limit":  "xs:long ptr=true rep=false json=false",
		"since":  "xs:string ptr=true rep=false json=false",
		"tags":   "xs:string ptr=false rep=true json=false",
		"where":  "struct ptr=true rep=false json=false",
		"opts":   "struct ptr=false rep=true json=false",
		"filter": "xs:string ptr=true rep=false json=true",
		"any":    "xs:string ptr=true rep=false json=true",
	} {
		if kinds[name] != want {
			t.Errorf("%s: %s, want %s", name, kinds[name], want)
		}
	}
	if xsd := string(tools["ext.search"].Payload.XSD()); !strings.Contains(xsd, `<xs:enumeration value="deep"/>`) {
		t.Errorf("enum not in the XSD:\n%s", xsd)
	}
}

func normalize(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMountKeepsContent: images, audio, resources and links come back as
// elements; what is too big is named in a Note; structured content stays.
func TestMountKeepsContent(t *testing.T) {
	_, url := externalServer(t)
	_, tools := mount(t, Options{Name: "ext", URL: url, Timeout: 10 * time.Second})
	r := call(t, tools["ext.picture"], `<ext.picture/>`)
	if r.Text != "a red dot" || len(r.Images) != 1 || r.Images[0].MIMEType != "image/png" || string(r.Images[0].Data) != "\x89PNG" ||
		len(r.Audio) != 1 || len(r.Links) != 1 || r.Links[0].URI != "file:///dot.png" || *r.Links[0].Size != 42 ||
		len(r.Resources) != 1 || r.Resources[0].Text != "hi" || r.Structured == nil || *r.Structured != `{"dots":1}` {
		t.Fatalf("result: %+v", r)
	}
	if len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "image (image/raw) of 524289 bytes not carried") {
		t.Fatalf("notes: %q", r.Notes)
	}
	pt, err := xmlpipe.NewPayloadType(reflect.TypeFor[ToolResult]())
	if err != nil {
		t.Fatal(err)
	}
	b, err := pt.AppendPayload(nil, r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<Image mimeType="image/png"><Data>iVBORw==</Data></Image>`,
		`<ResourceLink uri="file:///dot.png" name="dot.png"><MIMEType>image/png</MIMEType><Size>42</Size></ResourceLink>`,
		`<Resource uri="mem://note" mimeType="text/plain"><Text>hi</Text></Resource>`, `<Structured>{"dots":1}</Structured>`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("missing %s in %s", want, b)
		}
	}
	if _, err := pt.Decode(b); err != nil {
		t.Fatalf("the result does not decode: %v", err)
	}
}

// TestMountRestarts: a command server that exits is restarted with
// backoff; calls meanwhile fail at once with "server exited"; Close
// returns promptly and without error.
func TestMountRestarts(t *testing.T) {
	t.Setenv(serverEnv, "1")
	m, tools := mount(t, Options{Name: "proc", Command: []string{os.Args[0]}, Env: []string{serverEnv},
		Timeout: 20 * time.Second, RestartMin: 200 * time.Millisecond, RestartMax: time.Second})
	pidTool, exitTool := tools["proc.pid"], tools["proc.exit"]
	first := call(t, pidTool, `<proc.pid/>`)
	if first.Error != "" || first.Text == "" {
		t.Fatalf("pid: %+v", first)
	}
	if r := call(t, exitTool, `<proc.exit/>`); !strings.Contains(r.Error, "server exited") {
		t.Fatalf("exit: %+v", r)
	}
	start := time.Now()
	var (
		second  *ToolResult
		refused bool
	)
	for time.Since(start) < 30*time.Second {
		t0 := time.Now()
		second = call(t, pidTool, `<proc.pid/>`)
		if second.Error == "" {
			break
		}
		if !strings.Contains(second.Error, "server exited") || time.Since(t0) > 5*time.Second {
			t.Fatalf("while down: %q after %v", second.Error, time.Since(t0))
		}
		refused = true
		time.Sleep(20 * time.Millisecond)
	}
	if second.Error != "" || second.Text == first.Text {
		t.Fatalf("after restart: %+v (first pid %s)", second, first.Text)
	}
	t.Logf("restarted in %v (calls refused meanwhile: %v)", time.Since(start), refused)
	// A dead server at close: never an error, promptly.
	if r := call(t, exitTool, `<proc.exit/>`); !strings.Contains(r.Error, "server exited") {
		t.Fatalf("exit: %+v", r)
	}
	start = time.Now()
	if err := m.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if d := time.Since(start); d > closeWait+2*time.Second {
		t.Fatalf("Close took %v", d)
	}
	if r := call(t, pidTool, `<proc.pid/>`); !strings.Contains(r.Error, "mount closed") {
		t.Fatalf("after close: %+v", r)
	}
}

// TestMountCloseWhileRestartFails: a server that cannot be restarted (its
// program is gone) leaves Close prompt and error-free, and its callers are
// told it is down, not why: the failed start names the program's path,
// which goes to the log only.
func TestMountCloseWhileRestartFails(t *testing.T) {
	t.Setenv(serverEnv, "1")
	dir := t.TempDir()
	bin := dir + "/server"
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, self, 0o700); err != nil {
		t.Fatal(err)
	}
	m, tools := mount(t, Options{Name: "gone", Command: []string{bin}, Env: []string{serverEnv},
		Timeout: 20 * time.Second, RestartMin: 50 * time.Millisecond, RestartMax: 100 * time.Millisecond})
	if err := os.Remove(bin); err != nil {
		t.Fatal(err)
	}
	call(t, tools["gone.exit"], `<gone.exit/>`)
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := call(t, tools["gone.pid"], `<gone.pid/>`)
		if strings.Contains(r.Error, "restart failed") {
			if diff := cmp.Diff("mcp: external server gone: server exited; restart failed; retrying", r.Error); diff != "" {
				t.Errorf("the caller was told (-want +got):\n%s", diff)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no failed restart reported: %+v", r)
		}
		time.Sleep(20 * time.Millisecond)
	}
	start := time.Now()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > closeWait+2*time.Second {
		t.Fatalf("Close took %v", d)
	}
}

// TestMountNamesItsTimeout: a tool that does not answer within the mount's
// timeout is an error naming the server, the tool and the timeout — not
// the SDK's bare "context deadline exceeded" — and the server sees the
// call cancelled.
func TestMountNamesItsTimeout(t *testing.T) {
	s := sdk.NewServer(&sdk.Implementation{Name: "slow", Version: "v0"}, nil)
	cancelled := make(chan struct{})
	s.AddTool(&sdk.Tool{Name: "hang", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			<-ctx.Done()
			close(cancelled)
			return nil, ctx.Err()
		})
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(srv.Close)
	// The tool never answers, so the call can only end at the timeout; it
	// also bounds connecting to the in-process server, which takes
	// milliseconds.
	_, tools := mount(t, Options{Name: "ext", URL: srv.URL, Timeout: 3 * time.Second})
	r := call(t, tools["ext.hang"], `<ext.hang/>`)
	want := "mcp: external server ext: tool hang: no answer within the timeout (3s)"
	if diff := cmp.Diff(want, r.Error); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}
	select {
	case <-cancelled:
	case <-time.After(30 * time.Second):
		t.Error("the server never saw the call cancelled")
	}
}

// dupServer is a hand-written stdio server that lists the tool "twice"
// twice and "Case" and "case" (which the SDK's own server cannot do).
func dupServer() {
	in := bufio.NewScanner(os.Stdin)
	out := json.NewEncoder(os.Stdout)
	empty := map[string]any{"type": "object"}
	for in.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &req) != nil || req.ID == nil {
			continue
		}
		result := map[string]any{}
		switch req.Method {
		case "initialize":
			result = map[string]any{"protocolVersion": req.Params.ProtocolVersion,
				"capabilities": map[string]any{"tools": map[string]any{}}, "serverInfo": map[string]any{"name": "dup", "version": "v0"}}
		case "tools/list":
			var tools []map[string]any
			for _, name := range []string{"twice", "twice", "Case", "case"} {
				tools = append(tools, map[string]any{"name": name, "inputSchema": empty})
			}
			result = map[string]any{"tools": tools}
		}
		_ = out.Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
	}
	os.Exit(0)
}

// lockedBuffer collects log lines written from any goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestMountSaysWhyADuplicateIsSkipped: of a tool listed twice the first is
// mounted and the log says it was listed twice — not that its name
// "differs only in case" from itself, which is what it said for both.
func TestMountSaysWhyADuplicateIsSkipped(t *testing.T) {
	t.Setenv(serverEnv, "dup")
	var logs lockedBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))
	m, _ := mount(t, Options{Name: "dup", Command: []string{os.Args[0]}, Env: []string{serverEnv},
		Timeout: 20 * time.Second, Logger: logger})
	var mounted []string
	for _, tool := range m.Tools() {
		mounted = append(mounted, tool.Listener)
	}
	if diff := cmp.Diff([]string{"dup.twice", "dup.Case"}, mounted); diff != "" {
		t.Errorf("mounted (-want +got):\n%s", diff)
	}
	var skipped []string
	for line := range strings.Lines(logs.String()) {
		if strings.Contains(line, "tool not mounted") {
			skipped = append(skipped, strings.TrimSpace(line))
		}
	}
	want := []string{
		`level=WARN msg="mcp: tool not mounted" server=dup tool=twice error="listener name taken: the server lists tool \"twice\" more than once; the first is mounted"`,
		`level=WARN msg="mcp: tool not mounted" server=dup tool=case error="listener name taken: its name differs from tool \"Case\"'s only in case"`,
	}
	if diff := cmp.Diff(want, skipped); diff != "" {
		t.Errorf("logged (-want +got):\n%s", diff)
	}
}
