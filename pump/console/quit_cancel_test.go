package console_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"golang.org/x/term"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/llmtest"
	"github.com/xml-pipeline/xmlpipe/pump/console"
)

// TestTerminalQuitCancelsTheAnswers: leaving an in-process console on a
// terminal while an agent still answers cancels that answer, as a Ctrl-C
// does, and says so — rather than leave the organism's shutdown to wait on
// the model, give up with the message still in flight, and have the next
// start ask the model again for an answer nobody will read. The
// conversation is kept: it goes on at the next start.
func TestTerminalQuitCancelsTheAnswers(t *testing.T) {
	m := llmtest.NewChatModel(t, func(int) []string { return []string{"Rain on tin", " roofs"} })
	m.Hold = make(chan struct{})
	t.Cleanup(func() { close(m.Hold) })
	l := startAgents(t, m)
	c, err := console.New(l, console.Config{})
	if err != nil {
		t.Fatal(err)
	}
	in, typing := io.Pipe()
	scr := &screen{changed: make(chan struct{}, 1)}
	tm := term.NewTerminal(struct {
		io.Reader
		io.Writer
	}{c.ScreenInterrupts(in), scr}, "")
	done := make(chan error, 1)
	go func() { done <- c.RunTerminal(context.Background(), tm) }()
	scr.waitFor(t, "> ", 1)
	if _, err := io.WriteString(typing, "@poet rain\r"); err != nil {
		t.Fatal(err)
	}
	<-m.First
	scr.waitFor(t, "[poet] Rain on tin\r\n", 1)
	if _, err := io.WriteString(typing, "/quit\r"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("RunTerminal: %v", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("the session did not end:\n%s", scr.String())
	}
	got := strings.Join(scr.rendered(), "\n")
	if !strings.Contains(got, "cancelled") || !strings.Contains(got, "Goodbye.") || strings.Contains(got, "Still answering") {
		t.Fatalf("want the answer cancelled, then Goodbye:\n%s", got)
	}
	// The model still holds its answer back: only a cancel lets the
	// agent's handler return.
	p := l.Organism().Pump
	for deadline := time.Now().Add(time.Minute); p.InFlight() > 0; {
		if time.Now().After(deadline) {
			t.Fatalf("the answer still runs after the session ended: %d messages in flight", p.InFlight())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := m.Count(); n != 1 {
		t.Errorf("the model was asked %d times, want once", n)
	}
}
