package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// TestMCPStdio runs `xmlpipe mcp` as a subprocess and talks to it with the
// SDK's client over stdio, as Claude Desktop would.
func TestMCPStdio(t *testing.T) {
	dir := helloDir(t)
	cfg := filepath.Join(dir, "organism.yaml")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The greeter may use calculate: its listener is registered.
	b = []byte(strings.Replace(string(b), "peers: [shouter]", "peers: [shouter]\n    tools: [calculate]", 1))
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.Command(binary, "mcp", "--data", data, cfg)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "v0"}, nil)
	cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr:\n%s", err, stderr.String())
	}
	// The server names itself with the version `xmlpipe version` prints.
	out, err := exec.Command(binary, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(out), "\n")
	if got := "xmlpipe " + cs.InitializeResult().ServerInfo.Version; got != first {
		t.Errorf("server version %q, want %q as `xmlpipe version` says", got, first)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	if got := strings.Join(names, ","); !strings.Contains(got, "greeter") || !strings.Contains(got, "calculate") {
		t.Fatalf("tools: %s", got)
	}
	r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "greeter", Arguments: map[string]any{"Name": "Dan"}})
	if err != nil {
		t.Fatal(err)
	}
	if tc, ok := r.Content[0].(*sdk.TextContent); r.IsError || !ok || tc.Text != "HELLO, DAN!" {
		t.Fatalf("greeter: %+v", r.Content[0])
	}
	r, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "calculate", Arguments: map[string]any{"Expression": "6 * 7"}})
	if err != nil {
		t.Fatal(err)
	}
	if tc, ok := r.Content[0].(*sdk.TextContent); r.IsError || !ok || !strings.Contains(tc.Text, "<Value>42</Value>") {
		t.Fatalf("calculate: %+v", r.Content[0])
	}
	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	// The calls are in the journal.
	rd, err := store.OpenReadOnly(data)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	entries, err := rd.Tail(100)
	if err != nil {
		t.Fatal(err)
	}
	var calc bool
	for _, e := range entries {
		calc = calc || (e.From == "mcp" && e.To == "calculate" && strings.Contains(string(e.Bytes), "6 * 7"))
	}
	if !calc {
		t.Fatalf("no journaled calculate call in %d entries; stderr:\n%s", len(entries), stderr.String())
	}
}

// mcpOrganism writes the hello-world organism with a run_command listener
// that may run `sleep` (served as a tool to MCP clients).
func mcpOrganism(t *testing.T) string {
	t.Helper()
	dir := helloDir(t)
	cfg := filepath.Join(dir, "organism.yaml")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, `
  - name: run_command
    payload_class: tools.RunCommand
    handler: tools.RunCommand
    description: Runs sleep
    tool_config:
      run_command: {allowed_commands: [{command: sleep, args: ["{int}"]}], timeout: 60s}
`...)
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// mcpProcess is `xmlpipe mcp` spoken to line by line over its stdin/stdout.
type mcpProcess struct {
	t     *testing.T
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
	exit  chan error
	err   *syncWriter
}

func startMCP(t *testing.T, args ...string) *mcpProcess {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"mcp"}, args...)...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &mcpProcess{t: t, cmd: cmd, in: in, lines: make(chan string, 256), exit: make(chan error, 1),
		err: &syncWriter{w: &strings.Builder{}}}
	cmd.Stderr = p.err
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
		p.exit <- cmd.Wait()
	}()
	t.Cleanup(func() {
		in.Close()
		select {
		case <-p.exit:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	return p
}

func (p *mcpProcess) send(lines ...string) {
	p.t.Helper()
	for _, l := range lines {
		if _, err := io.WriteString(p.in, l+"\n"); err != nil {
			p.t.Fatal(err)
		}
	}
}

// await returns the next line holding want (30 s at most); lines before it
// are returned too.
func (p *mcpProcess) await(want string) (line string, before []string) {
	p.t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				p.t.Fatalf("output ended before %q; got %q\nstderr:\n%s", want, before, p.err)
			}
			if strings.Contains(l, want) {
				return l, before
			}
			before = append(before, l)
		case <-deadline:
			p.t.Fatalf("no %q within 30s; got %q\nstderr:\n%s", want, before, p.err)
		}
	}
}

// end closes stdin and returns the remaining output; the process must exit
// with status 0 within d.
func (p *mcpProcess) end(d time.Duration) []string {
	p.t.Helper()
	p.in.Close()
	var rest []string
	deadline := time.After(d)
	for {
		select {
		case l, ok := <-p.lines:
			if ok {
				rest = append(rest, l)
				continue
			}
			select {
			case err := <-p.exit:
				if err != nil {
					p.t.Fatalf("xmlpipe mcp: %v\nstderr:\n%s", err, p.err)
				}
				p.exit <- nil
			case <-deadline:
				p.t.Fatalf("xmlpipe mcp did not exit within %v", d)
			}
			return rest
		case <-deadline:
			p.t.Fatalf("xmlpipe mcp did not exit within %v after its input ended; got %q\nstderr:\n%s", d, rest, p.err)
		}
	}
}

// syncWriter serialises writes to a strings.Builder read by the test.
type syncWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.String()
}

const mcpInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`

// TestMCPPipedSession: a piped session with a malformed line, an invalid
// request, a batch and a coerced argument answers every request, and its
// end of input prints every answer and exits promptly.
func TestMCPPipedSession(t *testing.T) {
	cfg := mcpOrganism(t)
	in := strings.Join([]string{
		mcpInit,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`garbage {`,
		`{"foo":1}`,
		`[{"jsonrpc":"2.0","id":9,"method":"tools/list"}]`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"greeter","arguments":{"Name":5}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"greeter","arguments":{"Name":"Dan"}}}`,
	}, "\n") + "\n"
	start := time.Now()
	r := runBinary(t, filepath.Dir(cfg), in, "mcp", cfg)
	elapsed := time.Since(start)
	if r.code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", r.code, r.stderr)
	}
	out := r.stdout
	for _, want := range []string{
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,`,
		`"id":null,"error":{"code":-32600,"message":"Invalid Request: \"jsonrpc\" must be \"2.0\""}`,
		`"id":null,"error":{"code":-32600,"message":"Invalid Request: JSON-RPC batches are not allowed in protocol version 2025-06-18"}`,
		`{"jsonrpc":"2.0","id":1,"result":`,
		`{"jsonrpc":"2.0","id":2,"result":{`,
		`"id":3,"result":{"content":[{"type":"text","text":"invalid arguments for greeter: Name: want a string, got the number 5"}],"isError":true}`,
		`"id":4,"result":{"content":[{"type":"text","text":"HELLO, DAN!"}]`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %s in:\n%s", want, out)
		}
	}
	if n := strings.Count(strings.TrimSpace(out), "\n") + 1; n != 7 {
		t.Errorf("%d answers, want 7:\n%s", n, out)
	}
	t.Logf("piped session with EOF: %v", elapsed)
}

// sleepPIDs lists the processes running `sleep <arg>`.
func sleepPIDs(t *testing.T, arg string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		parts := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if len(parts) == 2 && filepath.Base(parts[0]) == "sleep" && parts[1] == arg {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestMCPCancelKillsRunCommand: notifications/cancelled for a run_command
// call running `sleep 4848` gets no answer and leaves no process behind.
// It needs Pump.Kill to cancel the running handler's context (the "cancel"
// work): without that the sleep outlives the cancel.
func TestMCPCancelKillsRunCommand(t *testing.T) {
	if len(sleepPIDs(t, "4848")) > 0 {
		t.Fatal("a sleep 4848 is already running")
	}
	cfg := mcpOrganism(t)
	p := startMCP(t, cfg)
	p.send(mcpInit, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	p.await(`"id":1,"result"`)
	p.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_command","arguments":{"Command":"sleep","Arg":["4848"]}}}`)
	var pids []int
	deadline := time.Now().Add(30 * time.Second)
	for len(pids) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		pids = sleepPIDs(t, "4848")
	}
	if len(pids) == 0 {
		t.Fatalf("sleep 4848 never started\nstderr:\n%s", p.err)
	}
	defer func() { // whatever happens, no sleep is left behind by the test
		for _, pid := range sleepPIDs(t, "4848") {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}()
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"test"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	if _, before := p.await(`"id":3,"result"`); len(before) > 0 {
		t.Fatalf("unexpected output: %q", before)
	}
	deadline = time.Now().Add(30 * time.Second)
	for len(sleepPIDs(t, "4848")) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if left := sleepPIDs(t, "4848"); len(left) > 0 {
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		t.Errorf("sleep 4848 still running (pids %v, now killed by the test) 30s after the cancel: "+
			"Pump.Kill does not cancel the running handler's context", left)
	}
	rest := p.end(30 * time.Second)
	for _, l := range rest {
		if strings.Contains(l, `"id":2`) {
			t.Errorf("the cancelled call was answered: %s", l)
		}
	}
}

// TestMCPClientGoneMidCall: a stdio client that goes away mid-call — it
// closes its ends of both pipes while run_command runs `sleep 4949` — does
// not get `xmlpipe mcp` killed by SIGPIPE when the cancelled call's answer
// is written: the command stops the call (no sleep is left running), shuts
// the organism down, says why on stderr and exits with status 1.
func TestMCPClientGoneMidCall(t *testing.T) {
	if len(sleepPIDs(t, "4949")) > 0 {
		t.Fatal("a sleep 4949 is already running")
	}
	cfg := mcpOrganism(t)
	cmd := exec.Command(binary, "mcp", "--drain", "1s", "--data", filepath.Join(filepath.Dir(cfg), "data"), cfg)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = outW
	stderr := &syncWriter{w: &strings.Builder{}}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	outW.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() { // whatever happens, no sleep is left behind by the test
		for _, pid := range sleepPIDs(t, "4949") {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}()
	lines := bufio.NewScanner(outR)
	if _, err := io.WriteString(in, mcpInit+"\n"+`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	if !lines.Scan() || !strings.Contains(lines.Text(), `"id":1,"result"`) {
		t.Fatalf("initialize: %q %v\nstderr:\n%s", lines.Text(), lines.Err(), stderr)
	}
	if _, err := io.WriteString(in, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_command","arguments":{"Command":"sleep","Arg":["4949"]}}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(sleepPIDs(t, "4949")) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if len(sleepPIDs(t, "4949")) == 0 {
		t.Fatalf("sleep 4949 never started\nstderr:\n%s", stderr)
	}
	// The client goes away.
	outR.Close()
	in.Close()
	select {
	case err := <-exited:
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("exit: %v, want status 1\nstderr:\n%s", err, stderr)
		}
		if ws := ee.Sys().(syscall.WaitStatus); ws.Signaled() || ws.ExitStatus() != 1 {
			t.Fatalf("exit: %v, want status 1, not a signal\nstderr:\n%s", err, stderr)
		}
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("xmlpipe mcp still running a minute after its client went away\nstderr:\n%s", stderr)
	}
	if !strings.Contains(stderr.String(), "broken pipe") {
		t.Errorf("stderr does not say the output broke:\n%s", stderr)
	}
	if left := sleepPIDs(t, "4949"); len(left) > 0 {
		t.Errorf("sleep 4949 still running (pids %v) after xmlpipe mcp exited", left)
	}
}

// TestMCPHTTPInterruptEndsCalls: SIGINT to `xmlpipe mcp --http` with a
// call running (run_command `sleep 4747`) ends the call at once — the
// client gets a tool error saying the server is shutting down, no sleep is
// left — and the command exits 0, instead of waiting out the HTTP
// server's shutdown grace on the open request and exiting 1 with
// "context deadline exceeded".
func TestMCPHTTPInterruptEndsCalls(t *testing.T) {
	if len(sleepPIDs(t, "4747")) > 0 {
		t.Fatal("a sleep 4747 is already running")
	}
	cfg := mcpOrganism(t)
	cmd := exec.Command(binary, "mcp", "--http", "127.0.0.1:0", cfg)
	errR, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		for _, pid := range sleepPIDs(t, "4747") {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}()
	var stderr syncWriter
	stderr.w = &strings.Builder{}
	url := make(chan string, 1)
	stderrDone := make(chan struct{})
	go func() {
		defer close(stderrDone)
		sc := bufio.NewScanner(errR)
		for sc.Scan() {
			_, _ = stderr.Write([]byte(sc.Text() + "\n"))
			if rest, ok := strings.CutPrefix(sc.Text(), "xmlpipe mcp: streamable HTTP on "); ok {
				url <- rest
			}
		}
	}()
	var endpoint string
	select {
	case endpoint = <-url:
	case <-time.After(60 * time.Second):
		t.Fatalf("the server never said where it listens\nstderr:\n%s", stderr.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "v0"}, nil).
		Connect(ctx, &sdk.StreamableClientTransport{Endpoint: endpoint}, nil)
	if err != nil {
		t.Fatal(err)
	}
	type answer struct {
		r   *sdk.CallToolResult
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "run_command",
			Arguments: map[string]any{"Command": "sleep", "Arg": []string{"4747"}}})
		answered <- answer{r, err}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for len(sleepPIDs(t, "4747")) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if len(sleepPIDs(t, "4747")) == 0 {
		t.Fatalf("sleep 4747 never started\nstderr:\n%s", stderr.String())
	}
	start := time.Now()
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case a := <-answered:
		if a.err != nil || !a.r.IsError || len(a.r.Content) == 0 ||
			!strings.Contains(a.r.Content[0].(*sdk.TextContent).Text, "shutting down") {
			t.Errorf("the running call got %+v, %v; want a tool error saying the server is shutting down", a.r, a.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the running call got no answer")
	}
	<-stderrDone
	if err := cmd.Wait(); err != nil {
		t.Errorf("exit: %v\nstderr:\n%s", err, stderr.String())
	}
	t.Logf("stopped %v after the interrupt", time.Since(start))
	if left := sleepPIDs(t, "4747"); len(left) > 0 {
		t.Errorf("sleep 4747 still running (pids %v) after xmlpipe mcp exited", left)
	}
	_ = cs.Close()
}
