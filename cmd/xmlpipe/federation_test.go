package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/hello"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/registry/store"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// organismB is the hello-world organism served by `xmlpipe run` whose
// greeter organism A calls through gateway "a".
const organismB = `organism: {name: organism-b, data_dir: .}
oob: {enabled: false}
meta: {allow_remote: true}
listeners:
  - {name: greeter, payload_class: handlers.hello.Greeting, handler: handlers.hello.handle_greeting,
     description: Greeting agent, agent: true, peers: [shouter], prompt: You greet.}
  - {name: shouter, payload_class: handlers.hello.GreetingResponse, handler: handlers.hello.handle_shout,
     description: Shouts}
  - {name: response-handler, payload_class: handlers.hello.ShoutedResponse,
     handler: handlers.hello.handle_response_print, description: Prints}
gateways:
  - {name: a, trusted_identity: a.pub, export: [Greeting]}
`

// runB starts `xmlpipe run` for organism B (dir/organism.yaml) on addr and
// waits until it runs.
func runB(t *testing.T, dir, addr string) *exec.Cmd {
	return runOrganism(t, dir, addr, "organism.yaml")
}

// runOrganism starts `xmlpipe run` for dir/file on addr and waits until it
// runs; the caller stops it.
func runOrganism(t *testing.T, dir, addr, file string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(binary, "run", "--listen", addr, file)
	cmd.Dir = dir
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stderr)
	var log strings.Builder
	for lines.Scan() {
		log.WriteString(lines.Text() + "\n")
		if strings.Contains(lines.Text(), "organism running") {
			// The rest of its log goes to dir/stderr.log (appended across
			// restarts), for a failing test to show.
			out, err := os.OpenFile(filepath.Join(dir, "stderr.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			go func() {
				_, _ = io.Copy(out, stderr)
				_ = out.Close()
			}()
			return cmd
		}
	}
	_ = cmd.Wait()
	t.Fatalf("%s did not start:\n%s", file, log.String())
	return nil
}

// TestFederationSurvivesKill: organism A (this process) keeps calling B's
// greeter through a gateway while B (`xmlpipe run`, another process) is
// killed with SIGKILL and restarted. A queues the calls made during the
// outage, reconnects, and B's journal shows every call exactly once.
func TestFederationSurvivesKill(t *testing.T) {
	dirA, dirB := federatedDirs(t)
	if err := os.WriteFile(filepath.Join(dirB, "organism.yaml"), []byte(organismB), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	b := runB(t, dirB, addr)
	t.Cleanup(func() { _ = b.Process.Kill(); _ = b.Wait() })
	t.Cleanup(func() {
		if t.Failed() {
			if b, err := os.ReadFile(filepath.Join(dirB, "stderr.log")); err == nil {
				t.Logf("B's log after its start:\n%s", b)
			}
		}
	})
	orgA := startA(t, dirA, addr, "Greeting")

	const total, killAt, restartAt = 120, 30, 70
	var completed sync.WaitGroup
	send := func(i int) {
		completed.Add(1)
		var once sync.Once
		_, err := orgA.Pump.Send(context.Background(), "console", "greeter", &hello.Greeting{Name: fmt.Sprintf("n%03d", i)},
			pump.OutletFunc(func(e pump.Event) {
				switch e.Kind {
				case pump.EventHuh: // the call's timeout, say: not answered
					t.Errorf("n%03d failed: %s", i, e.Error)
				case pump.EventComplete:
					once.Do(completed.Done)
				}
			}))
		if err != nil {
			t.Errorf("send %d: %v", i, err)
			once.Do(completed.Done)
		}
	}
	for i := range total {
		switch i {
		case killAt:
			if err := b.Process.Kill(); err != nil { // SIGKILL
				t.Fatal(err)
			}
			_ = b.Wait()
		case restartAt:
			b = runB(t, dirB, addr)
		}
		send(i)
		time.Sleep(5 * time.Millisecond) // an open-loop sender's pace, not a wait for anything
	}
	done := make(chan struct{})
	go func() { completed.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("calls still open after 60s: %+v", orgA.Federation.Status())
	}

	// B's journal: every name arrived at the greeter from gateway a once.
	r, err := store.OpenReadOnly(dirB)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	seen := map[string]int{}
	name := regexp.MustCompile(`<Name>(n\d+)</Name>`)
	if err := r.Each(0, func(e *store.Entry) error {
		if e.From == "a" && e.PayloadTag == "Greeting" && e.Direction == store.Inbound {
			if m := name.FindSubmatch(e.Bytes); m != nil {
				seen[string(m[1])]++
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for i := range total {
		if n := seen[fmt.Sprintf("n%03d", i)]; n != 1 {
			t.Errorf("n%03d arrived at B %d times, want exactly once", i, n)
		}
	}
	// The acknowledgement of A's last envelopes may trail the answers
	// (B writes them on the link from different goroutines).
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		s := orgA.Federation.Status()[0]
		if s.Queued == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("A still queues %d envelopes", s.Queued)
			break
		}
	}
}

// fedTestLogger logs to the test's output when -v is given.
func fedTestLogger(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	return slog.New(slog.DiscardHandler)
}

// TestFederationAnswersAfterCalleeRestart: A calls B's agent; B is killed
// with SIGKILL while the agent waits on its model. After the restart B's
// recovery hands the call to the agent again, and its answer still reaches
// A's waiting caller: B remembers which conversation serves which call.
func TestFederationAnswersAfterCalleeRestart(t *testing.T) {
	firstAsked, testDone := make(chan struct{}), make(chan struct{})
	var asked atomic.Int32
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Stream bool `json:"stream"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		if asked.Add(1) == 1 {
			close(firstAsked)
			select { // the model "thinks" until B dies
			case <-r.Context().Done():
			case <-testDone:
			}
			return
		}
		const text = "A poem about rain."
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"model": "m", "choices": []any{map[string]any{
				"message": map[string]any{"role": "assistant", "content": text}, "finish_reason": "stop"}},
				"usage": map[string]any{"prompt_tokens": 3, "completion_tokens": 5}})
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, chunk := range []any{
			map[string]any{"choices": []any{map[string]any{"delta": map[string]any{"role": "assistant", "content": text}}}},
			map[string]any{"choices": []any{map[string]any{"delta": map[string]any{}, "finish_reason": "stop"}}},
			map[string]any{"choices": []any{}, "usage": map[string]any{"prompt_tokens": 3, "completion_tokens": 5}},
		} {
			b, _ := json.Marshal(chunk)
			fmt.Fprintf(w, "data: %s\n\n", b)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer model.Close()
	defer close(testDone)

	dirA, dirB := federatedDirs(t)
	if err := os.WriteFile(filepath.Join(dirB, "organism.yaml"), fmt.Appendf(nil, `organism: {name: organism-b, data_dir: .}
oob: {enabled: false}
meta: {allow_remote: true}
llm:
  retries: 0
  backends: [{provider: openai, api_key_env: TEST_LLM_KEY, base_url: %s, model: m}]
listeners:
  - {name: poet, agent: true, description: Writes poems, prompt: You are poet.}
gateways:
  - {name: a, trusted_identity: a.pub, export: [PoetTask]}
`, model.URL), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TEST_LLM_KEY", "sk-test") // inherited by B
	addr := freeAddr(t)
	b := runB(t, dirB, addr)
	t.Cleanup(func() { _ = b.Process.Kill(); _ = b.Wait() })
	orgA := startA(t, dirA, addr, "PoetTask")

	replies := make(chan string, 2)
	l, ok := orgA.Pump.Lookup("poet")
	if !ok {
		t.Fatal("A did not import poet")
	}
	task, ok := stage.NewTextPayload(l.Payload.GoType(), "write about rain")
	if !ok {
		t.Fatalf("imported poet takes %v, no text", l.Payload.GoType())
	}
	if _, err := orgA.Pump.Send(context.Background(), "console", "poet", task, pump.OutletFunc(func(e pump.Event) {
		switch e.Kind {
		case pump.EventReply:
			text, _ := stage.PayloadText(e.Payload)
			replies <- text
		case pump.EventHuh:
			replies <- "huh: " + e.Error
		}
	})); err != nil {
		t.Fatal(err)
	}
	select {
	case <-firstAsked:
	case <-time.After(15 * time.Second):
		t.Fatal("B's agent never asked its model")
	}
	if err := b.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = b.Wait()
	b = runB(t, dirB, addr)
	select {
	case got := <-replies:
		if got != "A poem about rain." {
			t.Fatalf("A's caller got %q", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no answer after B's restart; A's gateways %+v", orgA.Federation.Status())
	}
	if n := asked.Load(); n != 2 {
		t.Errorf("the model was asked %d times, want 2 (once before the kill, once after)", n)
	}
}

// federatedDirs makes A's and B's data directories with their keys, each
// holding the other's identity (a.pub in B's, b.pub in A's).
func federatedDirs(t *testing.T) (dirA, dirB string) {
	t.Helper()
	dirA, dirB = t.TempDir(), t.TempDir()
	for _, d := range []string{dirA, dirB} {
		if r := runBinary(t, d, "", "keys", "init", "--data", d); r.code != 0 {
			t.Fatalf("keys init: %s", r.stderr)
		}
	}
	if r := runBinary(t, dirA, "", "keys", "export", "--data", dirA, filepath.Join(dirB, "a.pub")); r.code != 0 {
		t.Fatalf("keys export: %s", r.stderr)
	}
	if r := runBinary(t, dirB, "", "keys", "export", "--data", dirB, filepath.Join(dirA, "b.pub")); r.code != 0 {
		t.Fatalf("keys export: %s", r.stderr)
	}
	return dirA, dirB
}

// freeAddr is a loopback address nobody listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startA starts organism A in this process, importing tag from B at addr.
func startA(t *testing.T, dirA, addr, tag string) *organism.Organism {
	t.Helper()
	cfgA, err := config.Parse(filepath.Join(dirA, "organism.yaml"), fmt.Appendf(nil, `organism: {name: organism-a, data_dir: %s}
gateways:
  - {name: b, remote_url: "wss://%s", trusted_identity: %s, import: [%s], call_timeout: 60s}
`, dirA, addr, filepath.Join(dirA, "b.pub"), tag))
	if err != nil {
		t.Fatal(err)
	}
	return startDurable(t, cfgA, dirA)
}

// startDurable starts cfg in this process on the data directory dir and
// shuts it down when the test ends.
func startDurable(t *testing.T, cfg *config.Organism, dir string) *organism.Organism {
	t.Helper()
	o, err := organism.New(cfg, organism.Options{DataDir: dir, Logger: fedTestLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = o.Shutdown(ctx)
	})
	return o
}

// TestFederationWalkthrough runs the README's "Federate two organisms"
// with the shipped testdata/federation configurations — only the ports
// changed, so the test cannot collide with anything listening on the
// README's: keys init and export, B under `xmlpipe run`, and `@greeter Dan`
// piped into A's console printing B's shouted greeting.
func TestFederationWalkthrough(t *testing.T) {
	dir := t.TempDir()
	addr, oobAddr := freeAddr(t), freeAddr(t)
	_, oobPort, _ := net.SplitHostPort(oobAddr)
	for _, name := range []string{"a.yaml", "b.yaml"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "federation", name))
		if err != nil {
			t.Fatal(err)
		}
		s := strings.ReplaceAll(string(b), "wss://127.0.0.1:8767", "wss://"+addr)
		s = regexp.MustCompile(`(?m)^oob:.*$`).ReplaceAllString(s, "")
		s += "\noob: {port: " + oobPort + "}\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"keys", "init", "--data", "data-a"}, {"keys", "init", "--data", "data-b"},
		{"keys", "export", "--data", "data-a", "a.pub"}, {"keys", "export", "--data", "data-b", "b.pub"},
	} {
		if r := runBinary(t, dir, "", args...); r.code != 0 {
			t.Fatalf("xmlpipe %v: %s", args, r.stderr)
		}
	}
	b := runOrganism(t, dir, addr, "b.yaml")
	t.Cleanup(func() { _ = b.Process.Kill(); _ = b.Wait() })
	r := runBinary(t, dir, "@greeter Dan\n/quit\n", "console", "a.yaml")
	if r.code != 0 || !strings.Contains(r.stdout, "[b] HELLO, DAN!") {
		t.Fatalf("console exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout, "template greeting") {
		t.Errorf("A's console claims a local greeter:\n%s", r.stdout)
	}
}
