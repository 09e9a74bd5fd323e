package console

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// session runs one piped console session over b and returns its transcript.
func session(t *testing.T, b organism.Backend, cfg Config, input string) string {
	t.Helper()
	c, err := New(b, cfg)
	if err != nil {
		t.Fatalf("new console: %v", err)
	}
	var out strings.Builder
	if err := c.Run(context.Background(), strings.NewReader(input), &out); err != nil {
		t.Fatalf("run: %v", err)
	}
	return out.String()
}

// golden compares got with testdata/<name>.golden (rewritten with -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run with -update to create it): %v", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}

// TestCommands runs every command on a freshly booted hello-world organism.
func TestCommands(t *testing.T) {
	b := helloWorld(t)
	tests := []struct {
		name  string
		cfg   Config
		input string
	}{
		{"help", Config{}, "/help\n"},
		{"status", Config{}, "/status\n"},
		{"listeners", Config{}, "/listeners\n"},
		{"threads-none", Config{}, "/threads\n"},
		{"monitor-usage", Config{}, "/monitor\n"},
		{"monitor-no-match", Config{}, "/monitor 0bad\n"},
		{"monitor-all-none", Config{}, "/monitor *\n"},
		{"unknown-command", Config{}, "/frobnicate now\n"},
		{"plain-text", Config{}, "hello there\n"},
		{"unknown-listener", Config{}, "@Nobody hi\n"},
		{"listener-typo", Config{}, "@greter Dan\n@Shoutr hi\n"},
		{"command-typo", Config{}, "/hlep\n/staus\n/qiut\n"},
		{"python-commands", Config{}, "/restart\n/attach\n/detach now\n/passwd\n/pause greeter\n/configure @greeter\n"},
		{"empty-target", Config{}, "@\n"},
		{"blank-lines", Config{}, "\n   \n\r\n"},
		{"quit-ends-session", Config{}, "/quit\n/help\n"},
		{"exit-ends-session", Config{}, "/EXIT\n/help\n"},
		{"no-llm-note", Config{NoLLM: true}, ""},
		{"approvals-none", Config{}, "/approvals\n/approvals all\n/approvals maybe\n"},
		{"decide-unknown", Config{}, "/approve\n/deny\n/approve nope\n/deny nope not now\n"},
		{"halt-resume", Config{}, "/halt\n/halt sideways\n/resume\n/resume\n/halt shouter\n/resume greeter\n/resume shouter\n"},
		{"buffer-usage", Config{}, "/buffer\n/buffer *\n"},
		{"buffer-not-found", Config{}, "/buffer 0bad\n"},
		{"config", Config{}, "/config\n"},
		{"config-show", Config{}, "/config --show\n"},
		{"config-edit", Config{}, "/config -e\n/config --edit\n/config @greeter\n/config --list\n/config --frob\n"},
		{"targets", Config{}, "/targets\n"},
		{"clear-on-pipe", Config{}, "/clear\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			golden(t, filepath.Join("commands", tt.name), session(t, b, tt.cfg, tt.input))
		})
	}
}

// TestGreeter is the hello-world example: @greeter Dan ends as the shout,
// and the conversation's threads show in /threads, /monitor and Status.
func TestGreeter(t *testing.T) {
	b := helloWorld(t)
	got := session(t, b, Config{NoLLM: true}, "@greeter Dan\n/threads\n/monitor *\n")
	if !strings.Contains(got, "[shouter] HELLO, DAN!\n") {
		t.Errorf("no shout in the transcript:\n%s", got)
	}
	golden(t, "greeter", normalizeIDs(got))

	st, err := b.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// InFlight is left out: the pump may report a conversation complete a
	// moment before it releases the message's ingress slot.
	// The conversation completed: its root is idle, kept for a
	// continuation; the shouter's thread, spent (it forwarded), ended with
	// it, and its history slot with it.
	want := organism.Status{Organism: "hello-world", Listeners: 10, Threads: 0, Idle: 1, Slots: 1, Processed: 4}
	if diff := cmp.Diff(want, st, cmpopts.IgnoreFields(organism.Status{}, "InFlight")); diff != "" {
		t.Errorf("status after the greeting (-want +got):\n%s", diff)
	}
}

// TestMonitorPrefix shows one thread's history by a case-insensitive prefix.
func TestMonitorPrefix(t *testing.T) {
	b := helloWorld(t)
	session(t, b, Config{}, "@greeter Dan\n")
	threads, err := b.Threads(context.Background())
	if err != nil || len(threads) == 0 {
		t.Fatalf("threads after a greeting: %v, %v", threads, err)
	}
	first := threads[0].ID
	got := session(t, b, Config{}, "/monitor "+first[:6]+"\n/monitor "+strings.ToUpper(first[:4])+"\n")
	golden(t, "monitor-prefix", normalizeIDs(got))
}

// TestConversations covers replies, handler failures and ingress refusals
// of the console's own conversations, with and without --verbose, and a
// conversation that ends with nothing to show (pick takes red and answers
// nothing), which the console says rather than print nothing.
func TestConversations(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	b := testOrganism(t, release)
	tests := []struct {
		name  string
		cfg   Config
		input string
	}{
		{"reply", Config{}, "@echo hi there\n"},
		{"handler-failure", Config{}, "@fail boom\n"},
		{"handler-failure-verbose", Config{Verbose: true}, "@fail boom\n"},
		{"refused", Config{}, "@pick blue\n"},
		{"refused-verbose", Config{Verbose: true}, "@pick blue\n"},
		{"accepted-verbose", Config{Verbose: true}, "@pick red\n"},
		{"ended-without-answer", Config{}, "@pick red\n@echo after\n"},
		{"no-text-field", Config{}, "@counter 3\n"},
		{"listeners-broadcast", Config{}, "/listeners\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			golden(t, filepath.Join("conversations", tt.name), normalizeIDs(session(t, b, tt.cfg, tt.input)))
		})
	}
}

// /status names a listener halted alone, and stops naming it once resumed.
func TestStatusNamesAHaltedListener(t *testing.T) {
	b := helloWorld(t)
	got := session(t, b, Config{}, "/halt shouter\n/status\n/resume shouter\n/status\n")
	line := "Halted listener shouter: its messages wait; /resume shouter lifts its halt.\n"
	if n := strings.Count(got, line); n != 1 {
		t.Errorf("%q appears %d times, want once (before the resume):\n%s", line, n, got)
	}
}
