package console

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// TestPipedSessionWaits: a piped session whose conversation outlasts the
// line wait reads on, and at /quit waits for the answer before it ends.
func TestPipedSessionWaits(t *testing.T) {
	release := make(chan struct{})
	b := testOrganism(t, release)
	c, err := New(b, Config{LineWait: 20 * time.Millisecond, ReplyTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	scr := newScreen()
	done := make(chan error, 1)
	go func() { done <- c.Run(context.Background(), strings.NewReader("@gate slow\n/status\n/quit\n"), scr) }()
	scr.waitFor(t, "Threads: 1 active, ", 1) // the next line ran while the gate holds: its thread is live
	select {
	case err := <-done:
		t.Fatalf("the session ended before the answer: %v\n%s", err, scr.String())
	default:
	}
	close(release)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(eventTimeout):
		t.Fatal("the session did not end after the answer")
	}
	if got := scr.String(); !strings.HasSuffix(got, "[gate] opened: slow\n") || strings.Contains(got, "note:") {
		t.Fatalf("transcript:\n%s", got)
	}
}

// TestReplyTimeout: a piped session waits for a conversation only up to
// ReplyTimeout, says so and reports it.
func TestReplyTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	b := testOrganism(t, release)
	c, err := New(b, Config{ReplyTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	err = c.Run(context.Background(), strings.NewReader("@gate x\n/help\n"), &out)
	if !errors.Is(err, ErrStillRunning) {
		t.Fatalf("Run = %v; want ErrStillRunning", err)
	}
	got := normalizeIDs(out.String())
	note := "Commands:\n"
	if !strings.Contains(got, note) || !strings.HasSuffix(got, "note: thread <t1> still running after 50ms; not waiting longer\n") {
		t.Errorf("transcript:\n%s", got)
	}
}

// TestStructuredPayloads: @name {json} and @name <Payload> send every field
// of a payload with several; bad ones are refused with the reason (and
// never sent: counter, which answers nothing, is heard of once).
func TestStructuredPayloads(t *testing.T) {
	b := testOrganism(t, nil)
	got := session(t, b, Config{}, strings.Join([]string{
		`@pair {"A": "x", "B": 0, "C": ["p", "q"], "D": false}`,
		`@pair {"a": "y", "b": 2}`,
		`@pair <Pair><A>z</A><B>3</B><C>r</C></Pair>`,
		`@pair {"A": "x", "B": "2"}`,
		`@pair {"A": "x"`,
		`@pair <Pair><A>z</A></Pair>`,
		`@pair {"A": "x", "B": 1, "E": 1}`,
		`@counter {"N": 7}`,
		`@counter plain text`,
		`@echo <3 plain text`,
	}, "\n")+"\n")
	for _, want := range []string{
		`[pair] A="x" B=0 C=["p" "q"] D=false`,
		`[pair] A="y" B=2 C=[] D=absent`,
		`[pair] A="z" B=3 C=["r"] D=absent`,
		`Invalid payload for pair: B: want an integer, got the string "2"`,
		`Invalid JSON payload: unexpected end of JSON input`,
		`codec: decode Pair: missing element <B>`,
		`Invalid payload for pair: unknown field "E" (the fields are A, B, C, D)`,
		`[counter] (ended without an answer)`, // counter answers nothing
		`Cannot create payload for counter`,
		`[echo] echo: <3 plain text`,
	} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("transcript lacks %q:\n%s", want, got)
		}
	}
	if strings.Count(got, "[counter]") != 1 || strings.Contains(got, "[huh]") {
		t.Errorf("unexpected output:\n%s", got)
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
