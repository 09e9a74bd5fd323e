package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/llmtest"
	"github.com/xml-pipeline/xmlpipe/pump/bench/busload"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/bus/certs"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// reloadShape is one run of the operator-under-load check: how many
// reloads, how many bus clients and the pause between operator rounds.
type reloadShape struct {
	reloads int
	clients int
	rate    float64 // sends per second across the clients (open loop)
	every   time.Duration
}

// reloadVariants are the organism.yaml edits a reload cycles through: the
// base, a listener added, the greeter's prompt changed (and the listener
// removed again), the toolbox's tools changed, a gateway added, and a
// broken edit the reload must refuse with file:line (the gateway removed
// again by the next one).
const (
	variantBase = iota
	variantAddListener
	variantPrompt
	variantTools
	variantGateway
	variantBroken
	variantYAML
	reloadVariants
)

// reloadDoc is organism.yaml in variant v.
func reloadDoc(v int, modelURL string, oobPort int) string {
	prompt := "You greet people. Version one."
	if v == variantPrompt {
		prompt = "You greet people. Version two."
	}
	tools := "[run_command]"
	if v == variantTools {
		tools = "[run_command, calculate]"
	}
	var b strings.Builder
	fmt.Fprintf(&b, `organism: {name: reload-load}
oob: {port: %d}
llm:
  retries: 0
  backends:
    - {provider: openai, api_key_env: RELOAD_LOAD_KEY, base_url: %q, model: test-model}
listeners:
  - name: greeter
    payload_class: handlers.hello.Greeting
    handler: handlers.hello.handle_greeting
    description: Greets
    agent: true
    peers: [shouter]
    prompt: %q
  - {name: shouter, payload_class: handlers.hello.GreetingResponse, handler: handlers.hello.handle_shout, description: Shouts}
  - {name: response-handler, payload_class: handlers.hello.ShoutedResponse, handler: handlers.hello.handle_response_print, description: Prints}
  - name: toolbox
    agent: true
    description: Runs a command
    prompt: "TOOLBOX: run the command you are asked to."
    tools: %s
    tool_config:
      run_command: {allowed_commands: [{command: sleep, args: ["{int}"]}], timeout: 30s}
`, oobPort, modelURL, prompt, tools)
	switch v {
	case variantAddListener:
		b.WriteString("  - {name: spare, agent: true, description: Spare, prompt: You are spare.}\n")
	case variantGateway:
		b.WriteString("gateways:\n  - {name: peer, trusted_identity: peer.pub, export: [Greeting]}\n")
	case variantBroken:
		b.WriteString("  - {name: broken, payload_class: no.such.Class, handler: no.such.handle}\n")
	case variantYAML:
		b.WriteString("  - {name: broken, payload_class: [unclosed\n")
	}
	return b.String()
}

// soakModel is the loopback model: the toolbox agent calls run_command
// sleep 1 and then answers; every other caller (the greeter) gets
// "Hello, Dan!", which the shouter makes HELLO, DAN!.
func soakModel(t *testing.T) *llmtest.ChatModel {
	var m *llmtest.ChatModel
	m = llmtest.NewChatModel(t, func(n int) []string {
		msgs := m.Request(t, n)
		toolbox := false
		for _, msg := range msgs {
			switch {
			case msg.Role == "tool":
				return []string{"ran it"}
			case msg.Role == "system" && strings.Contains(msg.Content, "TOOLBOX"):
				toolbox = true
			}
		}
		if toolbox {
			return []string{llmtest.ToolCall(fmt.Sprintf("call_%d", n), "run_command", `{"Command":"sleep","Arg":["1"]}`)}
		}
		return []string{"Hello, Dan!"}
	})
	return m
}

// TestReloadSoak (XMLPIPE_SOAK=1, `make soak`): 50 reloads of a real
// `xmlpipe run` under 200 TLS /ws clients, alternating SIGHUP, the bus
// API and the OOB channel, with kills, cancels, halts and pauses in between (see
// runReloadLoad).
func TestReloadSoak(t *testing.T) {
	if os.Getenv("XMLPIPE_SOAK") != "1" {
		t.Skip("set XMLPIPE_SOAK=1 (make soak)")
	}
	runReloadLoad(t, reloadShape{reloads: 50, clients: 200, rate: 200, every: time.Second})
}

// TestReloadUnderLoad is the fast variant of TestReloadSoak: 20 reloads
// under 10 clients.
func TestReloadUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	runReloadLoad(t, reloadShape{reloads: 20, clients: 10, rate: 40, every: 100 * time.Millisecond})
}

// reloadRun is the running organism of runReloadLoad and what the test
// knows of it.
type reloadRun struct {
	s         *servedBus
	dir, cfg  string
	data      string
	modelURL  string
	oobPort   int
	token     string
	hupMu     sync.Mutex // one SIGHUP waiter at a time
	refusedRE *regexp.Regexp
}

// runReloadLoad: `xmlpipe run` (TLS, a free port) with a loopback model,
// shape.clients bus clients sending @greeter conversations at shape.rate,
// while an operator reloads organism.yaml shape.reloads times (SIGHUP,
// POST /api/v1/organism/reload and xmlpipe ctl reload in turn, sometimes
// all three at once), cycling through the edits of reloadDoc — each
// broken one refused with file:line and the running configuration kept —
// and between reloads begins a toolbox conversation (a model call, then a
// run_command child) and kills, cancels, halts and resumes, or pauses and
// resumes. Then: the process is up, every acknowledged conversation was
// answered exactly once (or refused with an error frame), every toolbox
// conversation ended with one complete event, the goroutines and file
// descriptors are back where they were before the reloads, no tool
// process is left, the gauges and ctl get-status's active-threads read 0
// at rest, a SIGHUP followed at once by SIGTERM stops it cleanly, and
// `xmlpipe journal verify` passes.
func runReloadLoad(t *testing.T, shape reloadShape) {
	model := soakModel(t)
	t.Setenv("RELOAD_LOAD_KEY", "sk-load")
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if r := runBinary(t, dir, "", "keys", "init", "--data", data); r.code != 0 {
		t.Fatalf("keys init: %d %s", r.code, r.stderr)
	}
	peer := filepath.Join(dir, "peer")
	if r := runBinary(t, dir, "", "keys", "init", "--data", peer); r.code != 0 {
		t.Fatalf("keys init (peer): %d %s", r.code, r.stderr)
	}
	if r := runBinary(t, dir, "", "keys", "export", "--data", peer, filepath.Join(dir, "peer.pub")); r.code != 0 {
		t.Fatalf("keys export: %d %s", r.code, r.stderr)
	}
	rootSecret := addServeUser(t, data, "root", auth.Admin)
	loadSecret := addServeUser(t, data, "load", auth.Operator)
	_, port, _ := net.SplitHostPort(freeAddr(t))
	oobPort, _ := strconv.Atoi(port)
	r := &reloadRun{dir: dir, cfg: filepath.Join(dir, "organism.yaml"), data: data, modelURL: model.URL,
		oobPort: oobPort, refusedRE: regexp.MustCompile(`organism\.yaml:\d+`)}
	r.write(t, variantBase)
	r.s = startRun(t, dir, data)
	r.token = r.s.login(t, "root", rootSecret)
	loadToken := r.s.login(t, "load", loadSecret)
	fp, err := certs.ParseFingerprint(r.s.fingerprint)
	if err != nil {
		t.Fatal(err)
	}
	clientTLS := certs.PinnedClientConfig(fp)

	// Warm up: one toolbox conversation and one greeting, then the resting
	// baseline.
	op := r.dialOperator(t, clientTLS)
	op.run(t, "warm-up")
	op.awaitAll(t)
	pid := r.s.cmd.Process.Pid
	baseG, baseFD := r.goroutines(t), fdCount(t, pid)
	t.Logf("at rest before the reloads: %d goroutines, %d fds, RSS %d MB", baseG, baseFD, vmRSSKB(pid)>>10)

	var ackMu sync.Mutex
	acked := map[string]int{}
	load := busload.LoadConfig{Target: busload.Target{URL: "wss" + strings.TrimPrefix(r.s.url, "https") + "/ws",
		TLS: clientTLS, Token: loadToken}, Clients: shape.clients,
		Duration: time.Duration(shape.reloads)*shape.every + 2*time.Second, Grace: 60 * time.Second, Rate: shape.rate,
		Acked: func(_ int, conv, _ string) {
			ackMu.Lock()
			acked[conv]++
			ackMu.Unlock()
		}}
	type driven struct {
		t   busload.Tally
		err error
	}
	done := make(chan driven, 1)
	go func() {
		tl, err := busload.Drive(context.Background(), load)
		done <- driven{tl, err}
	}()

	var peakRSS int64
	for i := range shape.reloads {
		v := (i + 1) % reloadVariants
		if i == shape.reloads-1 {
			v = variantBase // end where the baseline was taken
		}
		r.write(t, v)
		want := v != variantBroken && v != variantYAML
		switch {
		case i%5 == 4: // reloads at once: SIGHUP, the API and OOB
			var wg sync.WaitGroup
			wg.Go(func() { r.reloadAPI(t, want) })
			wg.Go(func() { r.reloadOOB(t, want) })
			r.reloadHUP(t, want)
			wg.Wait()
		case i%3 == 0:
			r.reloadHUP(t, want)
		case i%3 == 1:
			r.reloadAPI(t, want)
		default:
			r.reloadOOB(t, want)
		}
		// What is running is the last configuration applied: spare only
		// while variantAddListener is (a broken edit after it would keep
		// it, but none follows it), never the broken listener.
		if code, _ := r.call(t, "GET", "/api/v1/agents/broken", nil); code != 404 {
			t.Errorf("round %d: the broken listener is reachable (%d)", i, code)
		}
		if code, _ := r.call(t, "GET", "/api/v1/agents/spare", nil); (code == 200) != (v == variantAddListener) {
			t.Errorf("round %d (variant %d): GET /api/v1/agents/spare answered %d", i, v, code)
		}
		op.run(t, fmt.Sprintf("round %d", i))
		switch i % 4 {
		case 0:
			op.kill(t, r)
		case 1:
			op.cancel(t, r)
		case 2:
			r.post(t, "/api/v1/organism/halt", map[string]string{"scope": "all"}, 200)
			r.post(t, "/api/v1/organism/resume", nil, 200)
		case 3:
			r.post(t, "/api/v1/agents/toolbox/pause", nil, 200)
			r.post(t, "/api/v1/agents/toolbox/resume", nil, 200)
		}
		r.s.alive(t)
		peakRSS = max(peakRSS, vmRSSKB(pid))
		time.Sleep(shape.every)
	}
	res := <-done
	if res.err != nil {
		t.Fatalf("clients: %v", res.err)
	}
	tl := res.t
	t.Logf("clients: %d sent, %d acknowledged, %d answered, %d refused, %d lost, %d wrong replies, %d errors %v; p50 %v p99 %v",
		tl.Sent, tl.Acked, tl.Replies, tl.Refused, tl.Lost, tl.WrongReply, tl.Errors, tl.FirstErrors,
		tl.Percentile(0.5).Round(time.Millisecond), tl.Percentile(0.99).Round(time.Millisecond))
	if tl.Acked == 0 || tl.Lost != 0 || tl.WrongReply != 0 || tl.Errors != 0 {
		t.Errorf("clients: %d acknowledged, %d lost, %d wrong replies, %d errors (want none lost, wrong or failed)",
			tl.Acked, tl.Lost, tl.WrongReply, tl.Errors)
	}
	op.awaitAll(t)
	op.close()
	r.s.alive(t)

	// At rest: goroutines and fds back to the baseline, gauges at 0, no
	// tool process left.
	r.settle(t, baseG, baseFD)
	if st := runBinary(t, dir, "", "ctl", "--data", data, "get-status"); st.code != 0 ||
		!strings.Contains(st.stdout, "<active-threads>0</active-threads>") {
		t.Errorf("ctl get-status at rest: exit %d, want <active-threads>0</active-threads>\n%s%s", st.code, st.stdout, st.stderr)
	}
	if kids := toolChildren(pid); len(kids) > 0 {
		t.Errorf("tool processes left at rest: %v", kids)
	}
	results := 0
	for n := range model.Count() {

		for _, m := range model.Request(t, n) {
			if m.Role == "tool" && strings.Contains(m.Content, "ExitCode") {
				results++
			}
		}
	}
	if results == 0 {
		t.Error("no run_command result reached the model: the toolbox never ran its command")
	}
	t.Logf("peak RSS during the reloads: %d MB", peakRSS>>10)
	if peakRSS > 300<<10 {
		t.Errorf("RSS peaked at %d MB, want < 300 MB", peakRSS>>10)
	}

	// A SIGHUP with SIGTERM right behind it: the process stops cleanly.
	r.write(t, variantAddListener)
	if err := r.s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if err := r.s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := r.s.wait(t); code != 0 {
		t.Errorf("SIGTERM right after SIGHUP: exit %d\n%s", code, r.s.stderr)
	}
	if log := r.s.stderr.String(); strings.Contains(log, "panic") || strings.Contains(log, "DATA RACE") {
		t.Errorf("the log shows a crash:\n%s", log)
	}
	if v := runBinary(t, dir, "", "journal", "verify", "--data", data); v.code != 0 {
		t.Errorf("journal verify: exit %d\n%s%s", v.code, v.stdout, v.stderr)
	}
	checkAnsweredOnce(t, data, acked)
}

// write puts variant v in organism.yaml.
func (r *reloadRun) write(t *testing.T, v int) {
	t.Helper()
	writeFile(t, r.cfg, reloadDoc(v, r.modelURL, r.oobPort))
}

// reloadHUP sends SIGHUP and waits for its outcome in the log: reloaded,
// or (want false) refused with file:line.
func (r *reloadRun) reloadHUP(t *testing.T, want bool) {
	t.Helper()
	r.hupMu.Lock()
	defer r.hupMu.Unlock()
	const ok, refused = "organism reloaded", "reload refused"
	nOK, nRefused := strings.Count(r.s.stderr.String(), ok), strings.Count(r.s.stderr.String(), refused)
	if err := r.s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(60 * time.Second)
	for {
		log := r.s.stderr.String()
		// The API may reload at the same time: count at least one more of
		// the outcome wanted.
		if want && strings.Count(log, ok) > nOK {
			return
		}
		if !want && strings.Count(log, refused) > nRefused {
			last := log[strings.LastIndex(log, refused):]
			if !r.refusedRE.MatchString(last) {
				t.Errorf("SIGHUP refusal without file:line: %s", firstLine(last))
			}
			return
		}
		if want && strings.Count(log, refused) > nRefused {
			t.Fatalf("SIGHUP reload refused: %s", firstLine(log[strings.LastIndex(log, refused):]))
		}
		select {
		case <-r.s.stderr.changed:
		case err := <-r.s.exited:
			r.s.exited <- err
			t.Fatalf("xmlpipe exited on SIGHUP (%v)\n%s", err, log)
		case <-timeout:
			t.Fatalf("no reload outcome 60 s after SIGHUP")
		}
	}
}

// reloadAPI reloads over POST /api/v1/organism/reload: 200, or (want
// false) 422 naming organism.yaml:line.
func (r *reloadRun) reloadAPI(t *testing.T, want bool) {
	t.Helper()
	code, body := r.call(t, "POST", "/api/v1/organism/reload", nil)
	switch {
	case want && code != 200:
		t.Errorf("API reload: %d %v", code, body)
	case !want && code != 422:
		t.Errorf("API reload of a broken file: %d %v, want 422", code, body)
	case !want && !r.refusedRE.MatchString(fmt.Sprint(body["error"])):
		t.Errorf("API reload refusal without file:line: %v", body)
	}
}

// reloadOOB reloads over the OOB channel (xmlpipe ctl reload): an ack,
// or (want false) RELOAD_REFUSED naming organism.yaml:line.
func (r *reloadRun) reloadOOB(t *testing.T, want bool) {
	res := runBinary(t, r.dir, "", "ctl", "--data", r.data, "reload", "reason=load")
	switch {
	case want && (res.code != 0 || !strings.Contains(res.stdout, "<message>reloaded</message>")):
		t.Errorf("ctl reload: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	case want:
	case res.code == 1 && strings.Contains(res.stdout, "<code>RELOAD_REFUSED</code>"):
		if !r.refusedRE.MatchString(res.stdout) {
			t.Errorf("ctl reload refusal without file:line:\n%s", res.stdout)
		}
	// A file that is not YAML at all does not tell ctl where the channel
	// is: ctl itself refuses, naming file:line, and the organism is not
	// asked.
	case res.code == 1 && r.refusedRE.MatchString(res.stderr) && strings.Contains(res.stderr, "invalid YAML"):
	default:
		t.Errorf("ctl reload of a broken file: exit %d, want 1 with RELOAD_REFUSED\n%s%s", res.code, res.stdout, res.stderr)
	}
}

// call is servedBus.call with the admin token, safe from several
// goroutines (it reports with Errorf).
func (r *reloadRun) call(t *testing.T, method, path string, body any) (int, map[string]any) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, r.s.url+path, rd)
	if err != nil {
		t.Error(err)
		return 0, nil
	}
	req.Header.Set("Authorization", "Bearer "+r.token)
	c := r.s.client(t)
	defer c.CloseIdleConnections()
	c.Timeout = 60 * time.Second
	resp, err := c.Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", method, path, err)
		return 0, nil
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// post posts body and checks the status.
func (r *reloadRun) post(t *testing.T, path string, body any, want int) map[string]any {
	t.Helper()
	code, out := r.call(t, "POST", path, body)
	if code != want {
		t.Errorf("POST %s: %d %v, want %d", path, code, out, want)
	}
	return out
}

// metrics scrapes /metrics (admin) and returns every sample by its series
// (name and labels, as printed).
func (r *reloadRun) metrics(t *testing.T) map[string]float64 {
	t.Helper()
	req, err := http.NewRequest("GET", r.s.url+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+r.token)
	c := r.s.client(t)
	defer c.CloseIdleConnections()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("/metrics: %v", err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err == nil {
			out[line[:i]] = v
		}
	}
	return out
}

// goroutines reads go_goroutines from /metrics.
func (r *reloadRun) goroutines(t *testing.T) int {
	t.Helper()
	return int(r.metrics(t)["go_goroutines"])
}

// settle waits (up to 60 s) until the organism is at rest — nothing in
// flight, no queue, no handler running, no live conversation — and its
// goroutines and fds are back within a small margin of the baseline, then
// reports what is not.
func (r *reloadRun) settle(t *testing.T, baseG, baseFD int) {
	t.Helper()
	const slack = 8 // the metrics scrape's own connection, timers of the HTTP server
	pid := r.s.cmd.Process.Pid
	deadline := time.Now().Add(60 * time.Second)
	for {
		m := r.metrics(t)
		var busy []string
		for k, v := range m {
			if v != 0 && (strings.HasPrefix(k, "xmlpipe_listener_queue_depth") || strings.HasPrefix(k, "xmlpipe_listener_active") ||
				strings.HasPrefix(k, "xmlpipe_messages_in_flight") || strings.HasPrefix(k, "xmlpipe_conversations_live") ||
				strings.HasPrefix(k, "xmlpipe_listener_paused")) {
				busy = append(busy, fmt.Sprintf("%s=%g", k, v))
			}
		}
		g, fd := int(m["go_goroutines"]), fdCount(t, pid)
		if len(busy) == 0 && g <= baseG+slack && fd <= baseFD+slack {
			t.Logf("at rest after the reloads: %d goroutines (%d before), %d fds (%d before), RSS %d MB", g, baseG, fd,
				baseFD, vmRSSKB(pid)>>10)
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("not at rest 60 s after the load: gauges %v; %d goroutines (%d before), %d fds (%d before)",
				busy, g, baseG, fd, baseFD)
			return
		}
		time.Sleep(100 * time.Millisecond) // polling a state the test cannot be told of
	}
}

// fdCount counts the open file descriptors of pid.
func fdCount(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// vmRSSKB reads VmRSS (kB) of pid (0 when unreadable).
func vmRSSKB(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

// toolChildren lists the processes descending from pid (by walking /proc).
func toolChildren(pid int) []string {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	parent := map[int]int{}
	name := map[int]string{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …
		s := string(b)
		close := strings.LastIndexByte(s, ')')
		if close < 0 {
			continue
		}
		fields := strings.Fields(s[close+1:])
		if len(fields) < 2 {
			continue
		}
		pp, _ := strconv.Atoi(fields[1])
		parent[p] = pp
		name[p] = s[strings.IndexByte(s, '(')+1 : close]
	}
	var out []string
	for p := range parent {
		for q := parent[p]; q > 1; q = parent[q] {
			if q == pid {
				out = append(out, fmt.Sprintf("%d %s", p, name[p]))
				break
			}
		}
	}
	return out
}

// firstLine is s up to its first newline.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// checkAnsweredOnce reads the journal of data: every acknowledged
// conversation is there and was answered exactly once (one shouter →
// response-handler message).
func checkAnsweredOnce(t *testing.T, data string, acked map[string]int) {
	t.Helper()
	rd, err := store.OpenReadOnly(data)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	answers := map[string]int{}
	inbound := map[string]int{}
	for after := int64(0); ; {
		page, err := rd.After(after, 4096)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, e := range page {
			conv := e.Conversation
			if conv == "" {
				conv = e.Thread
			}
			switch {
			case e.Kind != store.Message:
			case e.Direction == store.Inbound && e.To == "greeter" && e.From != "shouter":
				inbound[conv]++
			case e.From == "shouter" && (e.To == "response-handler" || e.Listener == "response-handler"):
				answers[conv]++
			}
		}
		after = page[len(page)-1].Seq
	}
	var bad []string
	for conv, n := range acked {
		if n != 1 || answers[conv] != 1 {
			bad = append(bad, fmt.Sprintf("%s acked ×%d answered ×%d", conv, n, answers[conv]))
		}
	}
	t.Logf("journal: %d acknowledged conversations, %d not answered exactly once", len(acked), len(bad))
	if len(bad) > 0 {
		t.Errorf("%d acknowledged conversations not answered exactly once (first: %v)", len(bad), bad[:min(5, len(bad))])
	}
}

// operator is an admin's /ws socket beginning toolbox conversations and
// following each to its complete event.
type operator struct {
	c      *websocket.Conn
	mu     sync.Mutex
	open   []string          // conversations begun, not yet complete
	ended  map[string]string // conversation → its complete event's error ("" when answered)
	count  map[string]int    // conversation → complete events
	sent   chan map[string]any
	change chan struct{}
	done   chan struct{}
}

func (r *reloadRun) dialOperator(t *testing.T, tlsConf *tls.Config) *operator {
	t.Helper()
	d := websocket.Dialer{TLSClientConfig: tlsConf.Clone(), HandshakeTimeout: 30 * time.Second}
	h := http.Header{"Authorization": {"Bearer " + r.token}}
	c, resp, err := d.Dial("wss"+strings.TrimPrefix(r.s.url, "https")+"/ws", h)
	if err != nil {
		t.Fatalf("operator /ws: %v", err)
	}
	resp.Body.Close()
	o := &operator{c: c, ended: map[string]string{}, count: map[string]int{}, sent: make(chan map[string]any, 16),
		change: make(chan struct{}, 1), done: make(chan struct{})}
	go o.read()
	t.Cleanup(o.close)
	return o
}

func (o *operator) read() {
	defer close(o.done)
	for {
		var f map[string]any
		if err := o.c.ReadJSON(&f); err != nil {
			return
		}
		switch f["type"] {
		case "sent", "error":
			o.sent <- f
		case "complete":
			id, _ := f["thread_id"].(string)
			e, _ := f["error"].(string)
			o.mu.Lock()
			o.ended[id] = e
			o.count[id]++
			o.mu.Unlock()
			select {
			case o.change <- struct{}{}:
			default:
			}
		}
	}
}

func (o *operator) close() {
	_ = o.c.Close()
	<-o.done
}

// run begins a toolbox conversation.
func (o *operator) run(t *testing.T, text string) {
	t.Helper()
	if err := o.c.WriteJSON(map[string]any{"type": "send", "target": "toolbox", "content": text}); err != nil {
		t.Fatalf("operator send: %v", err)
	}
	select {
	case f := <-o.sent:
		if f["type"] != "sent" {
			t.Errorf("toolbox send refused: %v", f)
			return
		}
		o.mu.Lock()
		o.open = append(o.open, f["thread_id"].(string))
		o.mu.Unlock()
	case <-time.After(60 * time.Second):
		t.Fatal("no answer to the operator's send")
	}
}

// last is the newest conversation begun.
func (o *operator) last() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.open[len(o.open)-1]
}

// kill kills the newest conversation: 200, or 409 when it ended already.
func (o *operator) kill(t *testing.T, r *reloadRun) {
	t.Helper()
	if code, body := r.call(t, "POST", "/api/v1/threads/"+o.last()+"/kill", nil); code != 200 && code != 409 {
		t.Errorf("kill: %d %v", code, body)
	}
}

// cancel cancels the newest conversation: 200, or 409 when nothing of it
// is in flight.
func (o *operator) cancel(t *testing.T, r *reloadRun) {
	t.Helper()
	if code, body := r.call(t, "POST", "/api/v1/threads/"+o.last()+"/cancel", nil); code != 200 && code != 409 {
		t.Errorf("cancel: %d %v", code, body)
	}
}

// awaitAll waits until every conversation begun has exactly one complete
// event, each answered or ended by a kill or cancel.
func (o *operator) awaitAll(t *testing.T) {
	t.Helper()
	timeout := time.After(120 * time.Second)
	for {
		o.mu.Lock()
		var waiting []string
		for _, id := range o.open {
			if o.count[id] == 0 {
				waiting = append(waiting, id)
			}
		}
		var twice, odd []string
		for id, n := range o.count {
			if n > 1 {
				twice = append(twice, id)
			}
			if e := o.ended[id]; e != "" && e != "conversation killed" && e != "answer cancelled" {
				odd = append(odd, id+": "+e)
			}
		}
		o.mu.Unlock()
		if len(waiting) == 0 {
			ends := map[string]int{}
			o.mu.Lock()
			for _, id := range o.open {
				ends[cmp.Or(o.ended[id], "answered")]++
			}
			o.mu.Unlock()
			t.Logf("toolbox conversations: %v", ends)
			if len(twice) > 0 || len(odd) > 0 {
				t.Errorf("toolbox conversations completed twice %v, or with an unexpected error %v", twice, odd)
			}
			return
		}
		select {
		case <-o.change:
		case <-timeout:
			t.Fatalf("toolbox conversations without a complete event after 120 s: %v", waiting)
		}
	}
}
