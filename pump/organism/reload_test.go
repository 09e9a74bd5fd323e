package organism

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/xml-pipeline/xmlpipe/listeners/hello"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// reloadHead is the llm: section of the reload tests' organisms, pointing
// at base.
func reloadHead(base string) string {
	return fmt.Sprintf(`organism: {name: reload}
llm:
  retries: 0
  backends:
    - provider: openai
      api_key_env: TEST_LLM_KEY
      base_url: %s
      model: gpt-test
`, base)
}

// reloadOrganism starts the organism of doc, written to dir/organism.yaml.
func reloadOrganism(t *testing.T, dir, doc string) *Organism {
	t.Helper()
	return reloadOrganismWith(t, dir, doc, Options{})
}

// reloadOrganismWith is reloadOrganism with opts (its Logger set here).
func reloadOrganismWith(t *testing.T, dir, doc string, opts Options) *Organism {
	t.Helper()
	t.Setenv("TEST_LLM_KEY", "sk-test")
	cfg := parseIn(t, dir, doc)
	opts.Logger = slog.New(slog.DiscardHandler)
	if testing.Verbose() {
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	o, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := o.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
	return o
}

// parseIn writes doc to dir/organism.yaml and loads it.
func parseIn(t *testing.T, dir, doc string) *config.Organism {
	t.Helper()
	path := filepath.Join(dir, "organism.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

const reloadShouter = `  - name: shouter
    payload_class: handlers.hello.GreetingResponse
    handler: handlers.hello.handle_shout
    description: shouts
`

// handled is how many messages the listener called name has handled (a
// listener built again starts from zero).
func handled(t *testing.T, o *Organism, name string) int64 {
	t.Helper()
	for _, l := range o.Pump.Listeners() {
		if l.Name == name {
			return l.Handled
		}
	}
	t.Fatalf("no listener %s", name)
	return 0
}

// shout sends a GreetingResponse to shouter and waits for its handling.
func shout(t *testing.T, o *Organism) {
	t.Helper()
	done := make(chan struct{}, 1)
	_, err := o.Pump.Send(context.Background(), "console", "shouter", &hello.GreetingResponse{Message: "hi"},
		pump.OutletFunc(func(e pump.Event) {
			if e.Kind == pump.EventComplete {
				done <- struct{}{}
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("shouter did not complete")
	}
}

// TestReloadAppliesTheDiff: a reload adds, removes and replaces the
// listeners whose entries changed, rebuilds an agent whose peer changed,
// and leaves the others exactly as they were.
func TestReloadAppliesTheDiff(t *testing.T) {
	m := newScriptedModel(t, map[string][]string{"boss": {"boss here"}, "poet": {"a poem"}, "poet, briefly": {"short"},
		"other": {"other here"}, "critic": {"meh"}})
	dir := t.TempDir()
	o := reloadOrganism(t, dir, reloadHead(m.URL)+`listeners:
`+reloadShouter+`  - name: boss
    agent: true
    description: Plans
    prompt: You are boss.
    peers: [poet]
  - name: poet
    agent: true
    description: Writes poems
    prompt: You are poet.
  - name: other
    agent: true
    description: Another
    prompt: You are other.
`)
	shout(t, o)
	if got := ask(t, o, "poet", "rain"); got != "a poem" {
		t.Fatalf("poet: %q", got)
	}
	report, err := o.Reload(parseIn(t, dir, reloadHead(m.URL)+`listeners:
`+reloadShouter+`  - name: boss
    agent: true
    description: Plans
    prompt: You are boss.
    peers: [poet]
  - name: poet
    agent: true
    description: Writes poems
    prompt: You are poet, briefly.
  - name: critic
    agent: true
    description: Judges
    prompt: You are critic.
`))
	if err != nil {
		t.Fatal(err)
	}
	want := ReloadReport{Added: []string{"critic"}, Removed: []string{"other"}, Changed: []string{"poet", "boss"}, Unchanged: 1}
	if diff := cmp.Diff(want, report, cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("report (-want +got):\n%s", diff)
	}
	if got := ask(t, o, "poet", "rain"); got != "short" {
		t.Errorf("poet after the reload: %q", got)
	}
	if got := ask(t, o, "critic", "a poem"); got != "meh" {
		t.Errorf("critic: %q", got)
	}
	if _, ok := o.Pump.Lookup("other"); ok {
		t.Error("other is still registered")
	}
	if n := handled(t, o, "shouter"); n != 1 {
		t.Errorf("shouter was rebuilt (handled %d since)", n)
	}
	if o.CurrentConfig().Listeners[2].Prompt != "You are poet, briefly." {
		t.Error("CurrentConfig is not the reloaded configuration")
	}
	// The same configuration again changes nothing.
	report, err = o.Reload(parseIn(t, dir, reloadHead(m.URL)+`listeners:
`+reloadShouter+`  - name: boss
    agent: true
    description: Plans
    prompt: You are boss.
    peers: [poet]
  - name: poet
    agent: true
    description: Writes poems
    prompt: You are poet, briefly.
  - name: critic
    agent: true
    description: Judges
    prompt: You are critic.
`))
	if err != nil || len(report.Added)+len(report.Removed)+len(report.Changed) != 0 || report.Unchanged != 4 {
		t.Fatalf("an unchanged reload: %+v, %v", report, err)
	}
}

// blockingModel is a loopback OpenAI-protocol server whose replies wait
// until the test releases them; it reports each request's system prompt.
type blockingModel struct {
	*httptest.Server
	arrived chan string
	release chan struct{}
	once    sync.Once
}

// open lets every request waiting, and every later one, answer.
func (m *blockingModel) open() { m.once.Do(func() { close(m.release) }) }

func newBlockingModel(t *testing.T) *blockingModel {
	m := &blockingModel{arrived: make(chan string, 8), release: make(chan struct{})}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Messages []struct{ Content string }
		}
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &body)
		prompt := ""
		if len(body.Messages) > 1 {
			prompt = body.Messages[1].Content
		}
		m.arrived <- prompt
		select {
		case <-m.release:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"model": "gpt-test", "choices": []any{map[string]any{
			"message": map[string]any{"role": "assistant", "content": "answer to " + prompt}, "finish_reason": "stop"}},
			"usage": map[string]any{"prompt_tokens": 1, "completion_tokens": 1}})
	}))
	t.Cleanup(func() { m.open(); m.Close() })
	return m
}

// TestReloadDuringModelCall: a conversation waiting on its model when a
// reload replaces its agent (a new prompt and a new llm: section, so a new
// router) finishes on the version it started with; one started after the
// reload gets the new version.
func TestReloadDuringModelCall(t *testing.T) {
	m := newBlockingModel(t)
	dir := t.TempDir()
	agent := func(prompt string) string {
		return `listeners:
  - name: slow
    agent: true
    description: Thinks slowly
    prompt: ` + prompt + "\n"
	}
	o := reloadOrganism(t, dir, reloadHead(m.URL)+agent("You are slow."))
	first := make(chan string, 1)
	go func() { first <- ask(t, o, "slow", "one") }()
	if p := <-m.arrived; p != "You are slow." {
		t.Fatalf("first request's prompt %q", p)
	}
	report, err := o.Reload(parseIn(t, dir, strings.Replace(reloadHead(m.URL), "retries: 0", "retries: 1", 1)+
		agent("You are slow, and new.")))
	if err != nil {
		t.Fatal(err)
	}
	if !report.LLM || !slices.Equal(report.Changed, []string{"slow"}) {
		t.Fatalf("report %+v", report)
	}
	second := make(chan string, 1)
	go func() { second <- ask(t, o, "slow", "two") }()
	if p := <-m.arrived; p != "You are slow, and new." {
		t.Fatalf("second request's prompt %q", p)
	}
	m.open()
	if got := <-first; got != "answer to You are slow." {
		t.Errorf("the conversation running during the reload got %q", got)
	}
	if got := <-second; got != "answer to You are slow, and new." {
		t.Errorf("the conversation after the reload got %q", got)
	}
}

// TestReloadRefusals: a configuration that cannot be applied is refused
// with the reason (and file:line where there is one); the organism goes on
// with the configuration it had.
func TestReloadRefusals(t *testing.T) {
	m := newScriptedModel(t, map[string][]string{"poet": {"a poem"}})
	dir := t.TempDir()
	base := reloadHead(m.URL) + "listeners:\n" + reloadShouter + `  - name: poet
    agent: true
    description: Writes poems
    prompt: You are poet.
`
	o := reloadOrganism(t, dir, base)
	bad := filepath.Join(dir, "bad.wasm")
	// The magic and version, then a code section before any type section:
	// a module that does not compile.
	if err := os.WriteFile(bad, []byte("\x00asm\x01\x00\x00\x00\x0a\x01\x00\x01\x01\x00"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := o.AddListener(config.Listener{Name: "printer", PayloadClass: "handlers.hello.ShoutedResponse",
		Handler: "handlers.hello.handle_response_print", Description: "prints"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		doc  string
		want []string
		once string // a listener the error must name once (a wrap never repeats it)
	}{
		{"restart-only key", strings.Replace(base, "organism: {name: reload}", "organism: {name: reload, port: 9999}", 1),
			[]string{"organism.yaml:1: organism.port changed: it applies only at the next start"}, ""},
		{"oob key", base + "oob: {port: 9998}\n", []string{"oob.port changed"}, ""},
		// The core meta listeners' flags (and what xmlpipe mcp offers of
		// them, MetaRefuses) are fixed at the start: a reload cannot
		// leave them out of step with the meta: section in force.
		{"meta flags", base + "meta: {allow_prompt_requests: none, allow_list_capabilities: false}\n",
			[]string{"meta.allow_list_capabilities changed: it applies only at the next start",
				"meta.allow_prompt_requests changed: it applies only at the next start"}, ""},
		{"module that does not compile", base + `  - name: broken
    type: wasm
    module: bad.wasm
    description: does not compile
    payload: {root: Broken, fields: [{name: X, type: string}]}
`, []string{"organism.yaml:20: listener broken: module: "}, "broken"},
		{"unknown payload class", base + `  - name: mystery
    payload_class: nowhere.Nothing
    handler: nowhere.handle
    description: unknown
`, []string{"listener mystery: payload_class"}, "mystery"},
		{"unknown tool", base + `  - name: critic
    agent: true
    tools: [frobnicate]
    description: Judges
    prompt: You are critic.
`, []string{`unknown tool "frobnicate"`}, ""},
		{"name of a listener added while running", base + `  - name: printer
    payload_class: handlers.hello.ShoutedResponse
    handler: handlers.hello.handle_response_print
    description: prints
`, []string{"listener printer: the name is taken by a listener registered while running"}, "printer:"},
		{"root tag of a listener added while running", base + `  - name: printer2
    payload_class: handlers.hello.ShoutedResponse
    handler: handlers.hello.handle_response_print
    description: prints
`, []string{"organism.yaml:18: listener printer2: root tag collision: <ShoutedResponse> is already handled by printer;"},
			"printer2"},
		{"callable root of a listener added while running", base + `  - name: calc2
    payload_class: tools.Calculate
    handler: tools.Calculate
    description: calculates
    callable:
      root: ShoutedResponse
      description: calculates
      parameters: [{name: Expression, required: true}]
`, []string{"organism.yaml:23: listener calc2: root tag collision: <ShoutedResponse> is already handled by printer;"},
			"calc2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, "organism.yaml")
			if err := os.WriteFile(path, []byte(tc.doc), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Load(path)
			if err == nil {
				_, err = o.Reload(cfg)
			}
			if !errors.Is(err, ErrReloadRefused) && !errors.Is(err, config.ErrConfig) {
				t.Fatalf("err = %v, want a refusal", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			if n := strings.Count(err.Error(), tc.once); tc.once != "" && n != 1 {
				t.Errorf("error names %q %d times:\n%v", tc.once, n, err)
			}
			if got := ask(t, o, "poet", "rain"); got != "a poem" {
				t.Errorf("poet after the refusal: %q", got)
			}
			if o.CurrentConfig().Organism.Port != 8765 || len(o.CurrentConfig().Listeners) != 2 {
				t.Error("the configuration in force changed")
			}
			if o.MetaRefuses("console", "core.request-prompt") || !o.MetaRefuses("anonymous", "core.request-prompt") {
				t.Error("the meta flags in force changed")
			}
			for _, name := range []string{"broken", "mystery", "critic", "printer2"} {
				if _, ok := o.Pump.Lookup(name); ok {
					t.Errorf("%s was registered by a refused reload", name)
				}
			}
		})
	}
	// A reload keeps the listener added while running.
	if _, err := o.Reload(parseIn(t, dir, base+`  - name: critic
    agent: true
    description: Judges
    prompt: You are critic.
`)); err != nil {
		t.Fatal(err)
	}
	if _, ok := o.Pump.Lookup("printer"); !ok {
		t.Error("the listener added while running is gone after a reload")
	}
	// One removed while running that organism.yaml declares comes back.
	if err := o.RemoveListener(context.Background(), "shouter"); err != nil {
		t.Fatal(err)
	}
	report, err := o.Reload(parseIn(t, dir, base+`  - name: critic
    agent: true
    description: Judges
    prompt: You are critic.
`))
	if err != nil || !slices.Equal(report.Added, []string{"shouter"}) {
		t.Fatalf("reload after removing shouter: %+v, %v", report, err)
	}
	if _, ok := o.Pump.Lookup("shouter"); !ok {
		t.Error("shouter did not come back")
	}
}

// TestReloadWasmUnchangedIsKept: an unchanged wasm listener keeps its
// compiled module; one whose module file changed is compiled again and
// the old module is closed once its listener retired.
func TestReloadWasmUnchangedIsKept(t *testing.T) {
	src, err := os.ReadFile(guestPath(t, "calc"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	module := filepath.Join(dir, "calc.wasm")
	if err := os.WriteFile(module, src, 0o600); err != nil {
		t.Fatal(err)
	}
	doc := `organism: {name: reload-wasm}
listeners:
  - name: calc
    type: wasm
    module: calc.wasm
    description: A calculator
`
	o := reloadOrganism(t, dir, doc)
	before := o.wasm.get("calc")
	report, err := o.Reload(parseIn(t, dir, doc))
	if err != nil || report.Unchanged != 1 || o.wasm.get("calc") != before {
		t.Fatalf("unchanged reload: %+v, %v, module kept %v", report, err, o.wasm.get("calc") == before)
	}
	// A custom section (id 0, name "x", no data) changes the file, not the
	// module's meaning.
	if err := os.WriteFile(module, append(src, 0x00, 0x03, 0x01, 'x', 0x00), 0o600); err != nil {
		t.Fatal(err)
	}
	report, err = o.Reload(parseIn(t, dir, doc))
	if err != nil || !slices.Equal(report.Changed, []string{"calc"}) || o.wasm.get("calc") == before {
		t.Fatalf("reload of a changed module: %+v, %v", report, err)
	}
	c := make(collector, 8)
	env := stage.AppendEnvelope(nil, "tester", "calc", stage.NewThreadID(),
		[]byte(`<Calc xmlns=""><A>2</A><B>40</B><Op>add</Op></Calc>`))
	if _, err := o.Pump.InjectWait(context.Background(), env, c); err != nil {
		t.Fatal(err)
	}
	if e := c.await(t, pump.EventReply, pump.EventHuh); e.Kind != pump.EventReply || !strings.Contains(string(e.Envelope), "<Value>42</Value>") {
		t.Fatalf("calc after the reload: %s %s", e.Kind, e.Envelope)
	}
	// The replaced module is closed once its listener retired.
	deadline := time.Now().Add(20 * time.Second)
	for {
		o.wasm.mu.Lock()
		n := len(o.wasm.retired)
		o.wasm.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the replaced module was never released")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestReloadKeepsDeadMount: a reload that does not change an mcp entry
// keeps its session as it is, even when its server is gone; one that
// changes it to a server that cannot be reached is refused.
func TestReloadKeepsDeadMount(t *testing.T) {
	s := httptest.NewServer(http.NotFoundHandler())
	s.Close() // nothing listens there any more
	ext := addServer(t)
	url := ext.URL
	dir := t.TempDir()
	doc := func(u string) string {
		return `organism: {name: reload-mcp}
listeners:
  - name: ext
    type: mcp
    description: an external MCP server
    server: {url: ` + u + `, timeout: 5s}
`
	}
	o := reloadOrganism(t, dir, doc(url))
	mountBefore := o.units["ext"].mount
	// The server goes away: the mount's session is dead, the entry unchanged.
	ext.CloseClientConnections()
	ext.Close()
	report, err := o.Reload(parseIn(t, dir, doc(url)))
	if err != nil || report.Unchanged != 1 {
		t.Fatalf("reload with a dead mount: %+v, %v", report, err)
	}
	if o.units["ext"].mount != mountBefore {
		t.Error("the unchanged mount was replaced")
	}
	if _, err := o.Reload(parseIn(t, dir, doc(s.URL))); !errors.Is(err, ErrReloadRefused) ||
		!strings.Contains(err.Error(), "listener ext:") {
		t.Fatalf("reload to an unreachable server: %v", err)
	}
	if _, ok := o.Pump.Lookup("ext.add"); !ok {
		t.Error("the mount's tools are gone after a refused reload")
	}
	// Closing the dead session fails (listeners/mcpclient's concern); the
	// cleanup's second shutdown has nothing left to close.
	if err := o.Shutdown(context.Background()); err != nil {
		t.Logf("shutdown with a dead mount: %v", err)
	}
}

// addServer is an MCP server over streamable HTTP with one tool, add.
func addServer(t *testing.T) *httptest.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "external", Version: "v0"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "add", Description: "Adds two integers"},
		func(_ context.Context, _ *sdk.CallToolRequest, in addIn) (*sdk.CallToolResult, addOut, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprint(in.A + in.B)}}},
				addOut{Sum: in.A + in.B}, nil
		})
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(func() {
		srv.Close()
		// A session whose client never ended it (a test that killed the
		// server under it) would wait for its next request forever.
		for ss := range s.Sessions() {
			_ = ss.Close()
		}
	})
	return srv
}
