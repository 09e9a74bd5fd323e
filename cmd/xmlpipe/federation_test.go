package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/hello"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// organismB is the hello-world organism served by `xmlpipe run` whose
// greeter organism A calls through gateway "a".
const organismB = `organism: {name: organism-b, data_dir: .}
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

// runB starts `xmlpipe run` for organism B on addr and waits until it runs.
func runB(t *testing.T, dir, addr string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(binary, "run", "--listen", addr, "organism.yaml")
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
			go func() { _, _ = io.Copy(io.Discard, stderr) }()
			return cmd
		}
	}
	_ = cmd.Wait()
	t.Fatalf("organism B did not start:\n%s", log.String())
	return nil
}

// TestFederationSurvivesKill: organism A (this process) keeps calling B's
// greeter through a gateway while B (`xmlpipe run`, another process) is
// killed with SIGKILL and restarted. A queues the calls made during the
// outage, reconnects, and B's journal shows every call exactly once.
func TestFederationSurvivesKill(t *testing.T) {
	dirA, dirB := t.TempDir(), t.TempDir()
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
	if err := os.WriteFile(filepath.Join(dirB, "organism.yaml"), []byte(organismB), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	b := runB(t, dirB, addr)
	t.Cleanup(func() { _ = b.Process.Kill(); _ = b.Wait() })

	cfgA, err := config.Parse(filepath.Join(dirA, "organism.yaml"), fmt.Appendf(nil, `organism: {name: organism-a, data_dir: %s}
gateways:
  - {name: b, remote_url: "wss://%s", trusted_identity: %s, import: [Greeting], call_timeout: 60s}
`, dirA, addr, filepath.Join(dirA, "b.pub")))
	if err != nil {
		t.Fatal(err)
	}
	orgA, err := organism.New(cfgA, organism.Options{DataDir: dirA, Logger: fedTestLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := orgA.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = orgA.Shutdown(ctx)
	})

	const total, killAt, restartAt = 120, 30, 70
	var completed sync.WaitGroup
	send := func(i int) {
		completed.Add(1)
		var once sync.Once
		_, err := orgA.Pump.Send(context.Background(), "console", "greeter", &hello.Greeting{Name: fmt.Sprintf("n%03d", i)},
			pump.OutletFunc(func(e pump.Event) {
				if e.Kind == pump.EventComplete {
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
	if s := orgA.Federation.Status()[0]; s.Queued != 0 {
		t.Errorf("A still queues %d envelopes", s.Queued)
	}
}

// fedTestLogger logs to the test's output when -v is given.
func fedTestLogger(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	return slog.New(slog.DiscardHandler)
}
