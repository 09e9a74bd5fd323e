package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/listeners/wasm/wasmtest"
	"github.com/xml-pipeline/xmlpipe/oob"
)

// heldModel is a loopback OpenAI-protocol model whose answers wait until
// the test releases them (release: every waiting and later request
// answers). Each request's system prompt (the agent's) is sent on arrived
// before it waits. It answers "answer to <prompt>", streamed when asked.
type heldModel struct {
	*httptest.Server
	arrived chan string
	release chan struct{}
	once    sync.Once
}

func newHeldModel(t *testing.T) *heldModel {
	m := &heldModel{arrived: make(chan string, 16), release: make(chan struct{})}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Messages []struct{ Content string }
			Stream   bool
		}
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &body); err != nil || r.URL.Path != "/chat/completions" || len(body.Messages) < 2 {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		prompt := body.Messages[1].Content
		m.arrived <- prompt
		select {
		case <-m.release:
		case <-r.Context().Done():
			return
		}
		text := "answer to " + prompt
		if body.Stream {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{\"content\":%q}}]}\n\n", text)
			fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":3}}\n\ndata: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"model":"gpt-test","choices":[{"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":3}}`, text)
	}))
	t.Cleanup(func() { m.open(); m.Close() })
	return m
}

// open releases every waiting and later request.
func (m *heldModel) open() { m.once.Do(func() { close(m.release) }) }

// wsClient is a /ws connection whose frames a reader goroutine collects.
type wsClient struct {
	c      *websocket.Conn
	frames chan map[string]any
	closed chan error // the read error that ended the connection
}

// dialWS connects to the insecure-dev bus's /ws and reads its greeting.
func dialWS(t *testing.T, s *servedBus) *wsClient {
	t.Helper()
	u := "ws" + strings.TrimPrefix(s.url, "http") + "/ws"
	c, resp, err := websocket.DefaultDialer.Dial(u, nil)
	if err != nil {
		t.Fatalf("dial %s: %v", u, err)
	}
	resp.Body.Close()
	w := &wsClient{c: c, frames: make(chan map[string]any, 256), closed: make(chan error, 1)}
	go func() {
		for {
			var f map[string]any
			if err := c.ReadJSON(&f); err != nil {
				w.closed <- err
				return
			}
			w.frames <- f
		}
	}()
	t.Cleanup(func() { c.Close() })
	w.await(t, "connected", func(f map[string]any) bool { return f["type"] == "connected" })
	return w
}

// send writes one JSON frame.
func (w *wsClient) send(t *testing.T, v any) {
	t.Helper()
	if err := w.c.WriteJSON(v); err != nil {
		t.Fatalf("ws write: %v", err)
	}
}

// await returns the first frame match accepts, failing when the
// connection ends first or nothing comes within 30 s.
func (w *wsClient) await(t *testing.T, what string, match func(map[string]any) bool) map[string]any {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case f := <-w.frames:
			if match(f) {
				return f
			}
		case err := <-w.closed:
			w.closed <- err
			t.Fatalf("the /ws connection ended while waiting for %s: %v", what, err)
		case <-timeout:
			t.Fatalf("no %s on /ws", what)
		}
	}
}

// sendTo sends text to target and returns the conversation's thread id.
func (w *wsClient) sendTo(t *testing.T, target, text string) string {
	t.Helper()
	w.send(t, map[string]any{"type": "send", "target": target, "content": text})
	f := w.await(t, "sent to "+target, func(f map[string]any) bool { return f["type"] == "sent" || f["type"] == "error" })
	if f["type"] != "sent" {
		t.Fatalf("send to %s: %v", target, f)
	}
	return f["thread_id"].(string)
}

// alive checks the process has not exited.
func (s *servedBus) alive(t *testing.T) {
	t.Helper()
	select {
	case err := <-s.exited:
		s.exited <- err
		t.Fatalf("xmlpipe exited (%v)\nstderr:\n%s", err, s.stderr)
	default:
	}
}

// hup sends SIGHUP and waits for the n-th line holding want in the log.
func (s *servedBus) hup(t *testing.T, want string) {
	t.Helper()
	n := strings.Count(s.stderr.String(), want)
	if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(30 * time.Second)
	for strings.Count(s.stderr.String(), want) <= n {
		select {
		case <-s.stderr.changed:
		case err := <-s.exited:
			s.exited <- err
			t.Fatalf("xmlpipe exited on SIGHUP (%v)\nstderr:\n%s", err, s.stderr)
		case <-timeout:
			t.Fatalf("no %q after SIGHUP:\n%s", want, s.stderr)
		}
	}
}

// writeFile writes a test file or fails.
func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestRunReloadDuringModelCall: `xmlpipe run` with an agent waiting on its
// model and an MCP mount whose server has been killed. SIGHUP with a
// configuration that changes the agent and adds a listener: the process
// stays up, the /ws client stays connected on the same connection, the
// new listener is reachable at once, the waiting conversation finishes on
// the version it started with and gets its answer on that connection once
// the model answers; the next conversation uses the new version.
func TestRunReloadDuringModelCall(t *testing.T) {
	m := newHeldModel(t)
	t.Setenv("RELOAD_TEST_KEY", "sk-reload")
	dir := t.TempDir()
	hello := helloDir(t)
	pidFile := filepath.Join(dir, "mcp.pid")
	doc := func(prompt, extra string) string {
		return fmt.Sprintf(`organism: {name: reload-e2e}
llm:
  retries: 0
  backends:
    - provider: openai
      api_key_env: RELOAD_TEST_KEY
      base_url: %s
      model: gpt-test
listeners:
  - name: slow
    agent: true
    description: Thinks slowly
    prompt: %s
  - name: hello
    type: mcp
    description: the hello-world organism over MCP
    server: {command: [/bin/sh, -c, "echo $$ > %s; exec %s mcp %s"], timeout: 30s}
%s`, m.URL, prompt, pidFile, binary, filepath.Join(hello, "organism.yaml"), extra)
	}
	cfg := filepath.Join(dir, "organism.yaml")
	writeFile(t, cfg, doc("You are slow.", ""))
	s := startRun(t, dir, filepath.Join(dir, "data"), "--insecure-dev")

	// The mount's server dies.
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}

	ws := dialWS(t, s)
	first := ws.sendTo(t, "slow", "one")
	if p := <-m.arrived; p != "You are slow." {
		t.Fatalf("the model got prompt %q", p)
	}
	writeFile(t, cfg, doc("You are slow, version two.", `  - name: shouter
    payload_class: handlers.hello.GreetingResponse
    handler: handlers.hello.handle_shout
    description: Shouts
`))
	s.hup(t, "organism reloaded")
	s.alive(t)
	log := s.stderr.String()
	if !strings.Contains(log, `added=[shouter]`) || !strings.Contains(log, `changed=[slow]`) {
		t.Fatalf("the reload's changes are not logged:\n%s", log)
	}
	if status, body := s.call(t, "GET", "/health", "", nil); status != 200 || body["status"] != "ok" {
		t.Fatalf("health after the reload: %d %v", status, body)
	}
	if status, _ := s.call(t, "GET", "/api/v1/agents/hello.greeter", "", nil); status != 200 {
		t.Errorf("the dead mount's tools are gone after the reload: %d", status)
	}
	// The new listener answers at once, on the same connection.
	shouted := ws.sendTo(t, "shouter", "hey")
	ws.await(t, "shouter's conversation to complete", func(f map[string]any) bool {
		return f["type"] == "complete" && f["thread_id"] == shouted
	})
	// The waiting conversation gets its answer from the version it began with.
	m.open()
	reply := ws.await(t, "the answer of the conversation running during the reload", func(f map[string]any) bool {
		return f["type"] == "reply" && f["thread_id"] == first
	})
	if reply["from"] != "slow" || !strings.Contains(fmt.Sprint(reply["text"]), "answer to You are slow.") {
		t.Fatalf("reply %v", reply)
	}
	second := ws.sendTo(t, "slow", "two")
	if p := <-m.arrived; p != "You are slow, version two." {
		t.Fatalf("a conversation after the reload used prompt %q", p)
	}
	reply = ws.await(t, "the answer after the reload", func(f map[string]any) bool {
		return f["type"] == "reply" && f["thread_id"] == second
	})
	if !strings.Contains(fmt.Sprint(reply["text"]), "answer to You are slow, version two.") {
		t.Fatalf("reply after the reload %v", reply)
	}
	if n := strings.Count(s.stderr.String(), "organism running"); n != 1 {
		t.Errorf("the organism started %d times", n)
	}
	s.alive(t)
}

// healthWatch polls /health until stopped and counts the failures.
type healthWatch struct {
	polls, failures atomic.Int64
	stop, done      chan struct{}
}

func watchHealth(s *servedBus) *healthWatch {
	h := &healthWatch{stop: make(chan struct{}), done: make(chan struct{})}
	c := &http.Client{Timeout: 5 * time.Second}
	go func() {
		defer close(h.done)
		for {
			select {
			case <-h.stop:
				return
			default:
			}
			resp, err := c.Get(s.url + "/health")
			h.polls.Add(1)
			if err != nil {
				h.failures.Add(1)
				continue
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				h.failures.Add(1)
			}
		}
	}()
	return h
}

// end stops the polling and returns its counts.
func (h *healthWatch) end() (polls, failures int64) {
	close(h.stop)
	<-h.done
	return h.polls.Load(), h.failures.Load()
}

// TestRunReloadKeepsWasmCallsAndRefusesBadModule: an unchanged
// configuration reloaded while a WASM call runs does not drain or restart
// it, and /health answers throughout; a configuration adding a module that
// does not compile is refused (SIGHUP: logged; API: 422 with the reason)
// and the old configuration keeps serving.
func TestRunReloadKeepsWasmCallsAndRefusesBadModule(t *testing.T) {
	loop := wasmtest.New(t.TempDir()).Build(t, "loop", true)
	dir := t.TempDir()
	src, err := os.ReadFile(loop)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "spin.wasm"), string(src))
	// A code section before any type section: it does not compile.
	writeFile(t, filepath.Join(dir, "bad.wasm"), "\x00asm\x01\x00\x00\x00\x0a\x01\x00\x01\x01\x00")
	base := `organism: {name: reload-wasm}
listeners:
  - name: spin
    type: wasm
    module: spin.wasm
    description: Never answers
    payload: {root: Spin, fields: [{name: N, type: string}]}
    capabilities: {timeout: 120s, instances: 1}
  - name: shouter
    payload_class: handlers.hello.GreetingResponse
    handler: handlers.hello.handle_shout
    description: Shouts
`
	cfg := filepath.Join(dir, "organism.yaml")
	writeFile(t, cfg, base)
	s := startRun(t, dir, filepath.Join(dir, "data"), "--insecure-dev")
	ws := dialWS(t, s)
	ws.sendTo(t, "spin", "x")
	deadline := time.Now().Add(30 * time.Second)
	for {
		status, body := s.call(t, "GET", "/api/v1/agents/spin", "", nil)
		if status == 200 && body["active"] == 1.0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the WASM call never started: %d %v", status, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	health := watchHealth(s)
	s.hup(t, "organism reloaded")
	status, body := s.call(t, "GET", "/api/v1/agents/spin", "", nil)
	if status != 200 || body["active"] != 1.0 || body["handled"] != 0.0 {
		t.Fatalf("the running WASM call was disturbed by the reload: %d %v", status, body)
	}
	if m := regexpFind(`msg="organism reloaded" via=SIGHUP took=(\S+)`, s.stderr.String()); m != "" {
		t.Logf("reload with a WASM call running took %s", m)
	}

	writeFile(t, cfg, base+`  - name: broken
    type: wasm
    module: bad.wasm
    description: Does not compile
    payload: {root: Broken, fields: [{name: X, type: string}]}
`)
	s.hup(t, "reload refused")
	s.alive(t)
	if !strings.Contains(s.stderr.String(), "organism.yaml:15: listener broken: module: ") {
		t.Errorf("the refusal does not say where:\n%s", s.stderr)
	}
	status, body = s.call(t, "POST", "/api/v1/organism/reload", "", nil)
	if status != 422 || !strings.Contains(fmt.Sprint(body["error"]), "reload refused") ||
		!strings.Contains(fmt.Sprint(body["error"]), "listener broken") {
		t.Fatalf("API reload of a bad module: %d %v", status, body)
	}
	if status, _ := s.call(t, "GET", "/api/v1/agents/broken", "", nil); status != 404 {
		t.Errorf("the refused listener is registered: %d", status)
	}
	shouted := ws.sendTo(t, "shouter", "still here")
	ws.await(t, "shouter's conversation to complete", func(f map[string]any) bool {
		return f["type"] == "complete" && f["thread_id"] == shouted
	})
	polls, failures := health.end()
	if failures != 0 || polls == 0 {
		t.Fatalf("/health failed %d of %d times during the reloads", failures, polls)
	}
	t.Logf("/health answered %d polls during the reloads, none failed", polls)
	if status, body := s.call(t, "GET", "/api/v1/agents/spin", "", nil); status != 200 || body["active"] != 1.0 {
		t.Fatalf("the WASM call after the refused reloads: %d %v", status, body)
	}
	s.alive(t)
}

// regexpFind returns the first group of pattern in text ("" if none).
func regexpFind(pattern, text string) string {
	if m := regexp.MustCompile(pattern).FindStringSubmatch(text); m != nil {
		return m[1]
	}
	return ""
}

// TestRunOOBListenerSurvivesReloadAndRestart: a listener registered over
// OOB stays through a reload and is registered again at the next start;
// unregister-listener forgets it.
func TestRunOOBListenerSurvivesReloadAndRestart(t *testing.T) {
	dir, data := oobDir(t)
	s := startRun(t, dir, data, "--insecure-dev")
	s.stderr.waitFor(t, "OOB channel listening")
	ctl := func(args ...string) result {
		return runBinary(t, dir, "", append([]string{"ctl", "--data", data}, args...)...)
	}
	if r := ctl("register-listener", "name=calc", "class=tools.Calculate", "handler=tools.Calculate",
		"description=Calculates"); r.code != 0 {
		t.Fatalf("register-listener: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	calc := func(s *servedBus) {
		t.Helper()
		ws := dialWS(t, s)
		thread := ws.sendTo(t, "calc", "6 * 7")
		f := ws.await(t, "calc's answer", func(f map[string]any) bool {
			return f["type"] == "reply" && f["thread_id"] == thread
		})
		if !strings.Contains(fmt.Sprint(f["payload"]), "<Value>42</Value>") {
			t.Fatalf("calc answered %v", f)
		}
	}
	calc(s)
	s.hup(t, "organism reloaded")
	calc(s)
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	s.wait(t)

	s = startRun(t, dir, data, "--insecure-dev")
	s.stderr.waitFor(t, "OOB channel listening")
	if !strings.Contains(s.stderr.String(), `msg="stored listener registered" listener=calc`) {
		t.Errorf("the stored listener is not logged at start:\n%s", s.stderr)
	}
	calc(s)
	if r := ctl("list-listeners"); r.code != 0 || !strings.Contains(r.stdout, "<class>tools.Calculate</class>") {
		t.Errorf("list-listeners after the restart: %d\n%s", r.code, r.stdout)
	}
	if r := ctl("unregister-listener", "name=calc"); r.code != 0 {
		t.Fatalf("unregister-listener: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	stored, err := oob.ReadListeners(filepath.Join(data, listenerStore))
	if err != nil || len(stored) != 0 {
		t.Fatalf("stored after unregister: %v %v", stored, err)
	}
}

// TestRunBindsLoopback: without --listen the bus listens on
// organism.bind (default 127.0.0.1) and organism.port; --insecure-dev
// refuses an address other machines could reach.
func TestRunBindsLoopback(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir := helloDir(t)
	cfg := filepath.Join(dir, "organism.yaml")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, cfg, strings.Replace(string(b), "port: 8765", fmt.Sprintf("port: %d", port), 1))
	s := startServed(t, dir, false, "run", "--insecure-dev", "--data", filepath.Join(dir, "data"), "organism.yaml")
	if want := fmt.Sprintf("http://127.0.0.1:%d", port); s.url != want {
		t.Fatalf("announced %q, want %q", s.url, want)
	}
	if status, _ := s.call(t, "GET", "/health", "", nil); status != 200 {
		t.Fatalf("health: %d", status)
	}

	// A --listen is a bad flag (exit 2, before anything is built); a bind
	// in organism.yaml a refusal to serve (exit 1).
	tests := []struct {
		name string
		yaml string
		args []string
		code int
	}{
		{"--listen on every interface", "", []string{"--listen", "0.0.0.0:0"}, exitUsage},
		{"--listen without a host", "", []string{"--listen", ":0"}, exitUsage},
		{"organism.bind on every interface", "  bind: 0.0.0.0\n", nil, exitFailure},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := helloDir(t)
			cfg := filepath.Join(dir, "organism.yaml")
			b, err := os.ReadFile(cfg)
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, cfg, strings.Replace(string(b), "  port: 8765\n", "  port: 8765\n"+tc.yaml, 1))
			r := runBinary(t, dir, "", append([]string{"run", "--insecure-dev", "organism.yaml"}, tc.args...)...)
			if r.code != tc.code || !strings.Contains(r.stderr, "--insecure-dev serves without TLS or login, so only on a loopback address") {
				t.Fatalf("exit %d\nstderr:\n%s", r.code, r.stderr)
			}
		})
	}
}

// TestRunRefusesAListenThatIsNoAddress: a --listen that is not host:port
// is refused as such (a bad flag, exit 2), not as an address beyond this
// machine.
func TestRunRefusesAListenThatIsNoAddress(t *testing.T) {
	dir := helloDir(t)
	r := runBinary(t, dir, "", "run", "--insecure-dev", "--listen", "nonsense", "organism.yaml")
	if r.code != exitUsage || !strings.Contains(r.stderr, `"nonsense": not host:port`) || strings.Contains(r.stderr, "beyond") {
		t.Fatalf("exit %d\nstderr:\n%s", r.code, r.stderr)
	}
}
