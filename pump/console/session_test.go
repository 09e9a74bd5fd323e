package console

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// TestReplyTimeout: a piped session waits for a conversation only up to
// ReplyTimeout, says so, and reads on.
func TestReplyTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	b := testOrganism(t, release)
	got := normalizeIDs(session(t, b, Config{ReplyTimeout: 20 * time.Millisecond}, "@gate x\n/help\n"))
	note := "note: thread <t1> still running after 20ms\nCommands:\n"
	if !strings.Contains(got, note) {
		t.Errorf("transcript lacks %q:\n%s", note, got)
	}
}

// TestRunCancel: cancelling the context ends a session blocked on input.
func TestRunCancel(t *testing.T) {
	b := helloWorld(t)
	c, err := New(b, Config{})
	if err != nil {
		t.Fatal(err)
	}
	in, w := io.Pipe()
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	scr := newScreen()
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, in, scr) }()
	scr.waitFor(t, "Type /help", 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v; want context.Canceled", err)
	}
}

// TestWrite: lines written to the console (logs) are shown in the session.
func TestWrite(t *testing.T) {
	b := helloWorld(t)
	c, err := New(b, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("level=WARN msg=\"from the log\"\n")); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := c.Run(context.Background(), strings.NewReader("/quit\n"), &out); err != nil {
		t.Fatal(err)
	}
	want := "level=WARN msg=\"from the log\"\nxmlpipe console — organism hello-world\n"
	if !strings.HasPrefix(out.String(), want) {
		t.Errorf("transcript = %q; want prefix %q", out.String(), want)
	}
}

// TestReadError: an input error other than EOF ends the session with it.
func TestReadError(t *testing.T) {
	b := helloWorld(t)
	c, err := New(b, Config{})
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err = c.Run(context.Background(), io.MultiReader(strings.NewReader("/help\n"), errReader{boom}), io.Discard)
	if !errors.Is(err, boom) {
		t.Fatalf("Run = %v; want %v", err, boom)
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }
