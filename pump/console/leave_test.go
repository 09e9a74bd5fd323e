package console

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// A terminal session says that it ended, and names the conversations that
// were still answering (their answers will not show).
func TestTerminalGoodbye(t *testing.T) {
	tests := []struct {
		name    string
		silent  bool
		keys    string
		goodbye string
	}{
		{"quit", false, "/quit\r", "Goodbye.\r\n"},
		{"exit", false, "/exit\r", "Goodbye.\r\n"},
		{"ctrl-d", false, "\x04", "Goodbye.\r\n"},
		{"quit-while-answering", true, "@greeter Dan\r/quit\r",
			"Goodbye. Still answering, not shown here: greeter#<t1> (they stop as the organism shuts down).\r\n"},
		{"ctrl-d-while-answering", true, "@greeter Dan\r\x04",
			"Goodbye. Still answering, not shown here: greeter#<t1> (they stop as the organism shuts down).\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b organism.Backend = helloWorld(t)
			if tt.silent {
				b = silent{b}
			}
			typeKeys, scr, done := runTerminal(t, b)
			typeKeys(tt.keys)
			sessionEnd(t, done, scr)
			if got := normalizeIDs(scr.String()); !strings.Contains(got, tt.goodbye) {
				t.Errorf("no %q on the screen:\n%q", tt.goodbye, got)
			}
		})
	}
}

// A piped session whose output is a terminal says what it waits for at
// the end of its input; one whose output is not (a transcript) does not.
func TestPipedEndAnnouncesWait(t *testing.T) {
	b := silent{helloWorld(t)}
	const waiting = "waiting for 1 conversation (Ctrl-C to stop)…\n"
	for _, interactive := range []bool{true, false} {
		c, err := New(b, Config{LineWait: time.Millisecond, ReplyTimeout: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		err = c.runPiped(context.Background(), strings.NewReader("@greeter Dan\n"), &out, interactive)
		if err == nil {
			t.Fatalf("interactive=%v: the session waited for nothing:\n%s", interactive, out.String())
		}
		got := out.String()
		if strings.Contains(got, waiting) != interactive {
			t.Errorf("interactive=%v: %q shown: %v\n%s", interactive, waiting, !interactive, got)
		}
		if interactive && strings.Index(got, waiting) > strings.Index(got, "note: thread ") {
			t.Errorf("the wait was announced after it ended:\n%s", got)
		}
	}
}
