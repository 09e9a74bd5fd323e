package console_test

import (
	"context"
	"io"
	"strings"
	"testing"

	"golang.org/x/term"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/llmtest"
	"github.com/xml-pipeline/xmlpipe/pump/console"
)

// TestTerminalCtrlCEndsTheLiveLine: a Ctrl-C while an agent streams its
// answer on a terminal leaves what was shown as a line of its own, above
// the note that the answer was cancelled — not drawn again below the note
// as if the answer were still coming, and not again after every later line
// until the next answer. The next answer begins its own line.
func TestTerminalCtrlCEndsTheLiveLine(t *testing.T) {
	m := llmtest.NewChatModel(t, func(n int) []string {
		if n == 0 {
			return []string{"Rain on tin", " roofs"}
		}
		return []string{"Sunny today."}
	})
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
	typeKeys := func(keys string) {
		t.Helper()
		if _, err := io.WriteString(typing, keys); err != nil {
			t.Fatalf("type %q: %v (the session ended?)\n%q", keys, err, scr.String())
		}
	}
	scr.waitFor(t, "> ", 1)
	typeKeys("@poet rain\r")
	<-m.First
	scr.waitFor(t, "[poet] Rain on tin\r\n", 1) // live, the model still writing
	typeKeys("\x03")
	scr.waitFor(t, "cancelled; the conversation goes on", 1)
	typeKeys("@poet sun\r")
	scr.waitFor(t, "Sunny today.", 1)
	if err := typing.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("RunTerminal: %v", err)
	}
	shown := scr.rendered()
	partial, note, sunny := -1, -1, -1
	for i, line := range shown {
		switch {
		case strings.Contains(line, "Rain on tin"):
			if partial >= 0 {
				t.Errorf("the cancelled text shows on lines %d and %d, want once:\n%s", partial, i, strings.Join(shown, "\n"))
			}
			partial = i
		case strings.Contains(line, "cancelled; the conversation goes on"):
			note = i
		case strings.Contains(line, "Sunny today."):
			sunny = i
		}
	}
	if partial < 0 || note < 0 || sunny < 0 || !(partial < note && note < sunny) {
		t.Errorf("want the streamed text, then the cancel note, then the next answer; lines %d, %d, %d:\n%s",
			partial, note, sunny, strings.Join(shown, "\n"))
	}
	if !strings.HasPrefix(shown[sunny], "[poet] Sunny today.") {
		t.Errorf("the next answer does not begin its own line: %q", shown[sunny])
	}
}
