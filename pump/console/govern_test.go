package console_test

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
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/console"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// governedYAML is an agent whose run_command calls wait for a human; its
// loopback model first calls run_command, then answers.
const governedYAML = `organism: {name: governed}
llm:
  retries: 0
  backends:
    - provider: openai
      api_key_env: TEST_LLM_KEY
      base_url: %s
      model: gpt-test
listeners:
  - name: researcher
    agent: true
    description: Looks things up
    prompt: You are researcher.
    tools: [run_command]
    tool_config:
      run_command: {allowed_commands: [date]}
    approval: [run_command]
    tool_calling: xml             # the model writes <RunCommand> (native calls: pump/organism's tests)
`

// governedConfig starts a loopback model answering script in turn and
// writes the governed organism's configuration; it returns its path.
func governedConfig(t *testing.T, script ...string) string {
	t.Helper()
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		mu.Lock()
		text := script[min(n, len(script)-1)]
		n++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{
			"message": map[string]any{"role": "assistant", "content": text}, "finish_reason": "stop"}}})
	}))
	t.Cleanup(srv.Close)
	t.Setenv("TEST_LLM_KEY", "sk-test")
	path := filepath.Join(t.TempDir(), "organism.yaml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(governedYAML, srv.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// transcript is a console's output, safe to read while it is written.
type transcript struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *transcript) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *transcript) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// waitFor polls the transcript until re matches, and returns the match.
func (w *transcript) waitFor(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(w.String()); m != nil {
			return m
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no %s in the transcript:\n%s", re, w.String())
	return nil
}

var waiting = regexp.MustCompile(`\[approval\] ([0-9a-f]+): researcher → run_command waits for a human`)

// interactive runs a console session over b whose input the test writes.
func interactive(t *testing.T, b organism.Backend) (in io.WriteCloser, out *transcript, done <-chan error) {
	t.Helper()
	c, err := console.New(b, console.Config{LineWait: 10 * time.Millisecond}) // a held conversation would hold each @ line
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	out = &transcript{}
	ch := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		ch <- c.Run(ctx, pr, out)
	}()
	// At the end of input the console waits for the conversations still
	// open (one held for an approval waits long): the test's end stops it
	// and waits for it, so that no console outlives its test.
	t.Cleanup(func() {
		pw.Close()
		cancel()
		select {
		case <-finished:
		case <-time.After(60 * time.Second):
			t.Error("the console did not stop within 60s of the test's end")
		}
	})
	return pw, out, ch
}

func TestLocalConsoleDecidesApprovals(t *testing.T) {
	path := governedConfig(t, "<RunCommand><Command>date</Command></RunCommand>", "It ran.",
		"<RunCommand><Command>date</Command></RunCommand>", "I was refused.")
	l, err := organism.Assemble(organism.Options{Logger: slog.New(slog.DiscardHandler)},
		func(o organism.Options) (*organism.Organism, error) { return organism.Load(path, o) })
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Organism().Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Organism().Shutdown(context.Background()) })
	in, out, done := interactive(t, l)
	fmt.Fprintln(in, "@researcher what day is it?")
	id := out.waitFor(t, waiting)[1]
	fmt.Fprintln(in, "/approvals")
	out.waitFor(t, regexp.MustCompile(`(?m)^  `+id+`  pending  researcher → run_command`))
	fmt.Fprintln(in, "/approve "+id)
	out.waitFor(t, regexp.MustCompile(`Approval `+id+` approved: researcher → run_command`))
	out.waitFor(t, regexp.MustCompile(`\[researcher\] It ran\.`))
	fmt.Fprintln(in, "@researcher and now?")
	id2 := out.waitFor(t, regexp.MustCompile(`\[approval\] ([0-9a-f]+): researcher → run_command waits(?s:.*)\[approval\] ([0-9a-f]+): researcher → run_command waits`))[2]
	fmt.Fprintln(in, "/deny "+id2+" not today")
	out.waitFor(t, regexp.MustCompile(`\[researcher\] I was refused\.`))
	fmt.Fprintln(in, "/approve "+id2)
	out.waitFor(t, regexp.MustCompile(`Approval `+id2+` was denied already by console \(not today\)\.`))
	fmt.Fprintln(in, "/approvals denied")
	out.waitFor(t, regexp.MustCompile(id2+`  denied   researcher → run_command .* by console: not today`))
	fmt.Fprintln(in, "/quit")
	if err := <-done; err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
}

func TestRemoteConsoleDecidesApprovalsAndHalts(t *testing.T) {
	path := governedConfig(t, "<RunCommand><Command>date</Command></RunCommand>", "It ran.")
	b := startBusWith(t, func(o organism.Options) (*organism.Organism, error) {
		return organism.Load(path, o)
	})
	op := b.dial(t, "olga", b.user(t, "olga", auth.Operator))
	in, out, done := interactive(t, op)
	fmt.Fprintln(in, "@researcher what day is it?")
	id := out.waitFor(t, waiting)[1]
	fmt.Fprintln(in, "/approvals")
	out.waitFor(t, regexp.MustCompile(`(?m)^  `+id+`  pending  researcher → run_command`))
	fmt.Fprintln(in, "/halt")
	out.waitFor(t, regexp.MustCompile(`Error: forbidden for this role \(operator\)`))
	fmt.Fprintln(in, "/approve "+id+" looks fine")
	out.waitFor(t, regexp.MustCompile(`\[approval\] `+id+` approved: researcher → run_command by olga: looks fine`))
	out.waitFor(t, regexp.MustCompile(`\[researcher\] It ran\.`))
	fmt.Fprintln(in, "/deny "+id+" too late")
	out.waitFor(t, regexp.MustCompile(`Approval `+id+` was approved already by olga \(looks fine\)\.`))
	fmt.Fprintln(in, "/quit")
	if err := <-done; err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}

	admin := b.dial(t, "ada", b.user(t, "ada", auth.Admin))
	in, out, done = interactive(t, admin)
	fmt.Fprintln(in, "/halt")
	out.waitFor(t, regexp.MustCompile(`\[halt\] the organism is halted \(agents\) by ada`))
	out.waitFor(t, regexp.MustCompile(`Halted \(agents\)`))
	fmt.Fprintln(in, "/status")
	out.waitFor(t, regexp.MustCompile(`Halted \(agents\): queued messages wait; /resume lifts the halt\.`))
	fmt.Fprintln(in, "/resume")
	out.waitFor(t, regexp.MustCompile(`\[halt\] resumed by ada`))
	out.waitFor(t, regexp.MustCompile(`Resumed: what waited runs now\.`))
	fmt.Fprintln(in, "/quit")
	if err := <-done; err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
}

// startGoverned assembles and starts the governed organism of path.
func startGoverned(t *testing.T, path string) *organism.Local {
	t.Helper()
	l, err := organism.Assemble(organism.Options{Logger: slog.New(slog.DiscardHandler)},
		func(o organism.Options) (*organism.Organism, error) { return organism.Load(path, o) })
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Organism().Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Organism().Shutdown(context.Background()) })
	return l
}

// A piped session reads its input on one goroutine: a follow-up to a
// conversation that waits for a human must not wait for its answer, or the
// /approve after it is never read.
func TestPipedFollowUpToConversationWaitingForHumanIsRefused(t *testing.T) {
	path := governedConfig(t, "<RunCommand><Command>date</Command></RunCommand>", "It ran.", "More.")
	in, out, done := interactive(t, startGoverned(t, path))
	fmt.Fprintln(in, "@researcher what day is it?")
	id := out.waitFor(t, waiting)[1]
	fmt.Fprintln(in, "@researcher and more?")
	out.waitFor(t, regexp.MustCompile(`researcher#[0-9a-f]{8} waits for a human \(approval `+id+`\): line not sent; /approve `+id+` or /deny `+id+` <reason> first`))
	fmt.Fprintln(in, "/approve "+id+" ok")
	out.waitFor(t, regexp.MustCompile(`\[researcher\] It ran\.`))
	fmt.Fprintln(in, "@researcher and more?")
	out.waitFor(t, regexp.MustCompile(`\[researcher\] More\.`))
	fmt.Fprintln(in, "/quit")
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v\n%s", err, out)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the session did not end at /quit:\n%s", out)
	}
}

// At the end of a piped session nobody is left to decide: a conversation
// waiting for a human is named at once, not waited for until ReplyTimeout.
func TestPipedSessionEndsWithoutWaitingForAHuman(t *testing.T) {
	path := governedConfig(t, "<RunCommand><Command>date</Command></RunCommand>", "It ran.")
	in, out, done := interactive(t, startGoverned(t, path))
	fmt.Fprintln(in, "@researcher what day is it?")
	id := out.waitFor(t, waiting)[1]
	fmt.Fprintln(in, "/quit")
	select {
	case err := <-done:
		if !errors.Is(err, console.ErrStillRunning) {
			t.Fatalf("run: %v, want ErrStillRunning\n%s", err, out)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the session did not end at /quit:\n%s", out)
	}
	out.waitFor(t, regexp.MustCompile(`note: thread [0-9a-f]{8} waits for a human \(approval `+id+`\); not waiting for it`))
}

// The error a piped session ends with names a conversation left waiting
// for a human as such, with its approval: it was not waited for, so the
// error must not claim it ran for ReplyTimeout.
func TestPipedSessionErrorNamesTheApprovalNotReplyTimeout(t *testing.T) {
	path := governedConfig(t, "<RunCommand><Command>date</Command></RunCommand>", "It ran.")
	c, err := console.New(startGoverned(t, path), console.Config{LineWait: 10 * time.Millisecond, ReplyTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	pr, in := io.Pipe()
	t.Cleanup(func() { in.Close() })
	out := &transcript{}
	done := make(chan error, 1)
	go func() { done <- c.Run(context.Background(), pr, out) }()
	fmt.Fprintln(in, "@researcher what day is it?")
	id := out.waitFor(t, waiting)[1]
	go fmt.Fprintln(in, "/quit") // a pipe write waits for the console to read it
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the session did not end at /quit:\n%s", out)
	}
	if !errors.Is(err, console.ErrStillRunning) {
		t.Fatalf("run: %v, want ErrStillRunning\n%s", err, out)
	}
	want := regexp.MustCompile(`^console: conversations still running: [0-9a-f]{8} \(waits for a human: approval ` + id + `\)$`)
	if !want.MatchString(err.Error()) {
		t.Errorf("run: %q, want it to match %s", err, want)
	}
}

// The wait after an @ line ends when its conversation waits for a human:
// the /approve on the next line is read at once, not after Config.LineWait.
func TestPipedLineWaitEndsWhenAHumanMustDecide(t *testing.T) {
	path := governedConfig(t, "<RunCommand><Command>date</Command></RunCommand>", "It ran.")
	c, err := console.New(startGoverned(t, path), console.Config{LineWait: time.Hour, ReplyTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	pr, in := io.Pipe()
	t.Cleanup(func() { in.Close() })
	out := &transcript{}
	done := make(chan error, 1)
	go func() { done <- c.Run(context.Background(), pr, out) }()
	fmt.Fprintln(in, "@researcher what day is it?")
	id := out.waitFor(t, waiting)[1]
	go fmt.Fprintln(in, "/approve "+id+"\n/quit") // a pipe write waits for the console to read it
	out.waitFor(t, regexp.MustCompile(`\[researcher\] It ran\.`))
	if err := <-done; err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
}

// /approvals shows what a waiting call would do — its payload, the tool's
// arguments — not the first bytes of its envelope, whose header alone
// (namespace, sender, target, thread id) fills the line.
func TestApprovalsListShowsTheHeldCall(t *testing.T) {
	path := governedConfig(t, "<RunCommand><Command>date</Command></RunCommand>", "It ran.")
	in, out, done := interactive(t, startGoverned(t, path))
	fmt.Fprintln(in, "@researcher what day is it?")
	id := out.waitFor(t, waiting)[1]
	fmt.Fprintln(in, "/approvals")
	out.waitFor(t, regexp.MustCompile(`(?m)^  `+id+`  pending  researcher → run_command .*\n    <RunCommand><Command>date</Command></RunCommand>$`))
	fmt.Fprintln(in, "/approve "+id)
	out.waitFor(t, regexp.MustCompile(`\[researcher\] It ran\.`))
	fmt.Fprintln(in, "/quit")
	if err := <-done; err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
}

// The line that says a call waits for a human shows what the call would
// do, in process and over --connect, so the operator need not list the
// approvals to decide it.
func TestApprovalLineShowsTheHeldCall(t *testing.T) {
	held := regexp.MustCompile(`\[approval\] [0-9a-f]+: researcher → run_command waits for a human .*: /approve [0-9a-f]+ or /deny [0-9a-f]+ <reason>; it holds <RunCommand><Command>date</Command></RunCommand>`)
	for _, tc := range []struct {
		name    string
		backend func(t *testing.T, path string) organism.Backend
	}{
		{"in process", func(t *testing.T, path string) organism.Backend { return startGoverned(t, path) }},
		{"remote", func(t *testing.T, path string) organism.Backend {
			b := startBusWith(t, func(o organism.Options) (*organism.Organism, error) { return organism.Load(path, o) })
			return b.dial(t, "olga", b.user(t, "olga", auth.Operator))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := governedConfig(t, "<RunCommand><Command>date</Command></RunCommand>", "It ran.")
			in, out, _ := interactive(t, tc.backend(t, path))
			fmt.Fprintln(in, "@researcher what day is it?")
			out.waitFor(t, held)
		})
	}
}
