package console

import (
	"context"
	"io"
	"testing"
	"time"

	"golang.org/x/term"

	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// cancelling is a backend whose conversations run until cancelled: Cancel
// completes the conversation as the organism does (an OutputComplete
// saying the answer was cancelled) and records the thread.
type cancelling struct {
	silent
	c         *Console
	cancelled chan string
}

func (b *cancelling) Cancel(_ context.Context, thread string) (string, error) {
	b.cancelled <- thread
	b.c.receive(organism.Output{Kind: organism.OutputComplete, Conversation: thread, Text: organism.CancelledReason})
	return thread, nil
}

// A Ctrl-C while an answer is coming, over a backend that can cancel,
// cancels it and keeps the session and the conversation: the console says
// "^C: greeter#… cancelled; the conversation goes on", the agent's next
// line continues the same conversation, and a Ctrl-C at rest then leaves.
func TestTerminalCtrlCCancelsTheAnswer(t *testing.T) {
	b := &cancelling{silent: silent{helloWorld(t)}, cancelled: make(chan string, 4)}
	c, err := New(b, Config{Prompt: "xp> "})
	if err != nil {
		t.Fatal(err)
	}
	b.c = c
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
	var conv string
	select {
	case conv = <-b.cancelled:
	case <-time.After(eventTimeout):
		t.Fatalf("Ctrl-C cancelled nothing:\n%q", scr.String())
	}
	scr.waitFor(t, "^C: greeter#"+short(conv)+" cancelled; the conversation goes on", 1)
	if got := c.convs.currentOf("greeter"); got != conv {
		t.Errorf("greeter's conversation after the cancel = %q, want %q kept", got, conv)
	}
	if c.convs.isRunning(conv) {
		t.Errorf("the cancelled conversation still reads running")
	}
	go func() { _, _ = io.WriteString(typing, "\x03") }() // at rest: leaves (unread once the session ends)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("RunTerminal: %v", err)
		}
	case <-time.After(eventTimeout):
		t.Fatalf("Ctrl-C at rest did not end the session:\n%q", scr.String())
	}
}
