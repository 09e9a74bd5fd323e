package console

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/term"

	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// screen is the output side of a test terminal: it records every byte and
// lets the test wait until some text has appeared.
type screen struct {
	mu      sync.Mutex
	buf     strings.Builder
	changed chan struct{}
}

func newScreen() *screen { return &screen{changed: make(chan struct{}, 1)} }

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	s.buf.Write(p)
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (s *screen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// waitFor waits until text appears n times on the screen.
func (s *screen) waitFor(t *testing.T, text string, n int) {
	t.Helper()
	timeout := time.NewTimer(eventTimeout)
	defer timeout.Stop()
	for strings.Count(s.String(), text) < n {
		select {
		case <-s.changed:
		case <-timeout.C:
			t.Fatalf("%q did not appear %d times; screen:\n%q", text, n, s.String())
		}
	}
}

// TestTerminal drives a session through x/term: line editing, history, async
// output through the Terminal, and Ctrl-C / Ctrl-D ending the session.
func TestTerminal(t *testing.T) {
	b := helloWorld(t)
	tests := []struct {
		name string
		end  string
	}{
		{"ctrl-d", "\x04"},
		{"ctrl-c", "half-typed\x03"},
		{"quit", "/quit\r"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(b, Config{Prompt: "xp> "})
			if err != nil {
				t.Fatal(err)
			}
			in, typing := io.Pipe()
			scr := newScreen()
			tm := term.NewTerminal(struct {
				io.Reader
				io.Writer
			}{in, scr}, "")
			done := make(chan error, 1)
			go func() { done <- c.RunTerminal(context.Background(), tm) }()
			typeKeys := func(keys string) {
				if _, err := io.WriteString(typing, keys); err != nil {
					t.Fatalf("type %q: %v", keys, err)
				}
			}
			scr.waitFor(t, "xp> ", 1)
			typeKeys("@greet\x7fter Dan\r") // a backspace edits the line
			scr.waitFor(t, "[shouter] HELLO, DAN!", 1)
			typeKeys("/helo\x1b[Dl\r") // cursor left, insert: /hello
			scr.waitFor(t, "Unknown command: /hello", 1)
			typeKeys("\x1b[A\r") // up: the previous line again
			scr.waitFor(t, "Unknown command: /hello", 2)
			typeKeys(tt.end)
			if err := <-done; err != nil {
				t.Fatalf("RunTerminal: %v", err)
			}
			if got := scr.String(); !strings.Contains(got, "xmlpipe console — organism hello-world\r\n") {
				t.Errorf("banner not written with CRLF through the terminal:\n%q", got)
			}
		})
	}
}

// silent is a backend whose conversations never complete: each stays
// running, as an agent's does while its answer streams.
type silent struct{ organism.Backend }

func (silent) Send(_ context.Context, m organism.Message) (string, error) { return m.Thread, nil }

// A Ctrl-C while an answer is still coming does not end the session (and,
// in process, the organism with the answer half written): it says how to
// stop the conversation, and the session goes on.
func TestTerminalCtrlCWhileAnswering(t *testing.T) {
	c, err := New(silent{helloWorld(t)}, Config{Prompt: "xp> "})
	if err != nil {
		t.Fatal(err)
	}
	in, typing := io.Pipe()
	scr := newScreen()
	tm := term.NewTerminal(struct {
		io.Reader
		io.Writer
	}{c.screenInterrupts(in), scr}, "")
	done := make(chan error, 1)
	go func() { done <- c.RunTerminal(context.Background(), tm) }()
	typeKeys := func(keys string) {
		if _, err := io.WriteString(typing, keys); err != nil {
			t.Fatalf("type %q: %v (the session ended?)\n%q", keys, err, scr.String())
		}
	}
	scr.waitFor(t, "xp> ", 1)
	typeKeys("@greeter Dan\r")
	scr.waitFor(t, "greeter#", 1)
	typeKeys("\x03")
	scr.waitFor(t, " still answering; /kill <agent> stops one for good", 1)
	typeKeys("/threads\r")
	scr.waitFor(t, "@greeter continues it; answering", 1)
	typeKeys("/quit\r")
	if err := <-done; err != nil {
		t.Fatalf("RunTerminal: %v", err)
	}
}

// At rest — none of the console's conversations running — a Ctrl-C still
// ends the session, through the screen RunStdio puts before the Terminal.
func TestTerminalCtrlCAtRestEnds(t *testing.T) {
	c, err := New(silent{helloWorld(t)}, Config{Prompt: "xp> "})
	if err != nil {
		t.Fatal(err)
	}
	in, typing := io.Pipe()
	scr := newScreen()
	tm := term.NewTerminal(struct {
		io.Reader
		io.Writer
	}{c.screenInterrupts(in), scr}, "")
	done := make(chan error, 1)
	go func() { done <- c.RunTerminal(context.Background(), tm) }()
	scr.waitFor(t, "xp> ", 1)
	go func() { _, _ = io.WriteString(typing, "half-typed\x03") }() // unread once the session ends
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("RunTerminal: %v", err)
		}
	case <-time.After(eventTimeout):
		t.Fatalf("Ctrl-C at rest did not end the session:\n%q", scr.String())
	}
}
