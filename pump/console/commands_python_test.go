package console

import (
	"context"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/term"

	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// uuid matches a whole thread id.
var uuid = regexp.MustCompile(`\b([0-9a-f]{8})-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)

// normalizeUUIDs is normalizeIDs over text that shows whole thread ids too.
func normalizeUUIDs(s string) string {
	return normalizeIDs(uuid.ReplaceAllString(s, "${1}"))
}

// TestBuffer shows one thread's context buffer, as SecureConsole's /buffer
// does: every slot with its payload, by a case-insensitive id prefix or the
// whole id.
func TestBuffer(t *testing.T) {
	b := helloWorld(t)
	session(t, b, Config{}, "@greeter Dan\n")
	threads, err := b.Threads(context.Background())
	if err != nil || len(threads) == 0 {
		t.Fatalf("threads after a greeting: %v, %v", threads, err)
	}
	id := threads[0].ID
	got := session(t, b, Config{}, "/buffer "+strings.ToUpper(id[:6])+"\n/buffer "+id+"\n")
	golden(t, "buffer", normalizeUUIDs(got))
}

// twoThreads is a backend whose /monitor history has two threads sharing
// the prefix "3f2a".
type twoThreads struct{ organism.Backend }

func (twoThreads) Monitor(_ context.Context, prefix string) ([]organism.History, error) {
	all := []organism.History{
		{ID: "3f2a1b2c-0000-4000-8000-000000000001", Slots: []organism.Slot{{From: "console", To: "greeter",
			PayloadType: "Greeting", Payload: "<Greeting>\n  <Name>Dan</Name>\n</Greeting>"}}},
		{ID: "3f2a9d8e-0000-4000-8000-000000000002", Slots: []organism.Slot{{From: "greeter", To: "shouter",
			PayloadType: "GreetingResponse", Payload: "<GreetingResponse><Message>" + strings.Repeat("ab", 80) +
				"</Message></GreetingResponse>"}}},
	}
	var out []organism.History
	for _, h := range all {
		if strings.HasPrefix(h.ID, strings.ToLower(prefix)) {
			out = append(out, h)
		}
	}
	return out, nil
}

// A prefix that matches several threads is named ambiguous, with the ids
// it matches; the whole id of one of them picks it, and a long payload is
// cut, on one line.
func TestBufferAmbiguous(t *testing.T) {
	b := twoThreads{helloWorld(t)}
	tests := []struct {
		name, input, want string
	}{
		{"ambiguous", "/buffer 3f2a\n", "Ambiguous thread id 3f2a: 2 threads match (3f2a1b2c-0000-4000-8000-000000000001, " +
			"3f2a9d8e-0000-4000-8000-000000000002); give more of the id\n"},
		{"one-of-them", "/buffer 3f2a1\n", "Thread: 3f2a1b2c-0000-4000-8000-000000000001\nSlots: 1\n" +
			strings.Repeat("-", 60) + "\n[0] console -> greeter: Greeting\n    <Greeting> <Name>Dan</Name> </Greeting>\n"},
		{"cut", "/buffer 3f2a9d8e-0000-4000-8000-000000000002\n", "Thread: 3f2a9d8e-0000-4000-8000-000000000002\nSlots: 1\n" +
			strings.Repeat("-", 60) + "\n[0] greeter -> shouter: GreetingResponse\n    <GreetingResponse><Message>" +
			strings.Repeat("ab", 36) + "…\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := session(t, b, Config{}, tt.input)
			_, got, _ = strings.Cut(got, "Type /help for commands, @listener message to chat\n")
			if got != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// /config never prints a secret of the configuration.
func TestConfigShowsNoSecret(t *testing.T) {
	b := startOrganism(t, func(o organism.Options) (*organism.Organism, error) {
		return organism.Load("testdata/secrets.yaml", o)
	})
	got := session(t, b, Config{}, "/config\n")
	if !strings.Contains(got, "Thread scheduling: breadth-first") {
		t.Fatalf("no configuration shown:\n%s", got)
	}
	for _, secret := range []string{"SECRET", "sk-", "scrape"} {
		if strings.Contains(got, secret) {
			t.Errorf("/config shows %q:\n%s", secret, got)
		}
	}
}

// runTerminal starts a terminal session over b and returns a function
// typing keys, the screen and the session's end.
func runTerminal(t *testing.T, b organism.Backend) (typeKeys func(string), scr *screen, done <-chan error) {
	t.Helper()
	c, err := New(b, Config{Prompt: "xp> "})
	if err != nil {
		t.Fatal(err)
	}
	in, typing := io.Pipe()
	t.Cleanup(func() { typing.Close() })
	scr = newScreen()
	tm := term.NewTerminal(struct {
		io.Reader
		io.Writer
	}{c.screenInterrupts(in), scr}, "")
	end := make(chan error, 1)
	go func() { end <- c.RunTerminal(context.Background(), tm) }()
	scr.waitFor(t, "xp> ", 1)
	return func(keys string) {
		if _, err := io.WriteString(typing, keys); err != nil {
			t.Fatalf("type %q: %v (the session ended?)\n%q", keys, err, scr.String())
		}
	}, scr, end
}

// sessionEnd waits for a terminal session to end without an error.
func sessionEnd(t *testing.T, done <-chan error, scr *screen) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("RunTerminal: %v", err)
		}
	case <-time.After(eventTimeout):
		t.Fatalf("the session did not end:\n%q", scr.String())
	}
}

// /clear clears a terminal's screen.
func TestTerminalClear(t *testing.T) {
	typeKeys, scr, done := runTerminal(t, helloWorld(t))
	typeKeys("/clear\r")
	scr.waitFor(t, clearSequence, 1)
	typeKeys("/quit\r")
	sessionEnd(t, done, scr)
}
