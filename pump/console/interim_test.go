package console_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"golang.org/x/term"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/aeiou"
	"github.com/xml-pipeline/xmlpipe/listeners/llm/llmtest"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/console"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// loopOrganism builds an organism whose agent planner, under AEIOU loop
// control, talks to the model at url.
func loopOrganism(url string) func(organism.Options) (*organism.Organism, error) {
	return func(o organism.Options) (*organism.Organism, error) {
		cfg, err := config.Parse("organism.yaml", []byte(`organism: {name: loops}
llm:
  retries: 0
  backends:
    - {provider: openai, name: local, base_url: `+url+`, model: test-model}
listeners:
  - name: planner
    agent: true
    description: Plans in steps
    prompt: You are planner.
    loop_control: aeiou
`))
		if err != nil {
			return nil, err
		}
		return organism.New(cfg, o)
	}
}

// loopModel is a streaming model that works in two loop-control turns: it
// asks for a continue token and ends "Step one." with it, then asks for a
// done token and ends "All done." with it.
func loopModel(t *testing.T) *llmtest.ChatModel {
	var m *llmtest.ChatModel
	magic := func(action string) []string {
		return []string{llmtest.ToolCall("m-"+action, aeiou.ToolName, `{"kind":"LOOP","payload":{"action":"`+action+`"}}`)}
	}
	token := func(n int) string {
		msgs := m.Request(t, n)
		for i := len(msgs) - 1; i >= 0; i-- {
			if msgs[i].Role == "tool" {
				return msgs[i].Content
			}
		}
		return ""
	}
	m = llmtest.NewChatModel(t, func(n int) []string {
		switch n {
		case 0:
			return magic("continue")
		case 1:
			return []string{"Step ", "one.\n", token(n)}
		case 2:
			return magic("done")
		}
		return []string{"All ", "done.\n", token(n)}
	})
	return m
}

// TestInterimTextShows: the text of a turn an agent's loop control
// continues is shown as the agent's interim text — on a pipe as a line of
// its own before the answer, in process and over --connect; on a terminal
// once, as it streams — and the final answer follows it, each without its
// token.
func TestInterimTextShows(t *testing.T) {
	const want = "[planner] Step one.\n[planner] All done.\n"
	for _, tc := range []struct {
		name    string
		backend func(t *testing.T, m *llmtest.ChatModel) organism.Backend
	}{
		{"in process", func(t *testing.T, m *llmtest.ChatModel) organism.Backend {
			return startLoops(t, m)
		}},
		{"over --connect", func(t *testing.T, m *llmtest.ChatModel) organism.Backend {
			b := startBusWith(t, loopOrganism(m.URL))
			return b.dial(t, "wendy", b.user(t, "wendy", auth.Operator))
		}},
	} {
		t.Run(tc.name+" on a pipe", func(t *testing.T) {
			c, err := console.New(tc.backend(t, loopModel(t)), console.Config{ReplyTimeout: 60 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			if err := c.Run(context.Background(), strings.NewReader("@planner plan it\n"), &out); err != nil {
				t.Fatalf("run: %v\n%s", err, out.String())
			}
			if !strings.Contains(out.String(), want) || strings.Contains(out.String(), aeiou.TokenPrefix) {
				t.Errorf("transcript lacks %q (or shows a token):\n%s", want, out.String())
			}
		})
	}
	t.Run("in process on a terminal", func(t *testing.T) {
		c, err := console.New(startLoops(t, loopModel(t)), console.Config{})
		if err != nil {
			t.Fatal(err)
		}
		in, typing := io.Pipe()
		scr := &screen{changed: make(chan struct{}, 1)}
		tm := term.NewTerminal(struct {
			io.Reader
			io.Writer
		}{in, scr}, "")
		done := make(chan error, 1)
		go func() { done <- c.RunTerminal(context.Background(), tm) }()
		waitScreen(t, scr, "> ")
		if _, err := io.WriteString(typing, "@planner plan it\r"); err != nil {
			t.Fatal(err)
		}
		waitScreen(t, scr, "All done.")
		if err := typing.Close(); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("RunTerminal: %v", err)
		}
		shown := scr.rendered()
		for _, line := range []string{"[planner] Step one.", "[planner] All done."} {
			if n := countLines(shown, line); n != 1 {
				t.Errorf("%q shows %d times, want once:\n%q", line, n, shown)
			}
		}
		if strings.Contains(scr.String(), aeiou.TokenPrefix) {
			t.Errorf("a token shows:\n%q", scr.String())
		}
	})
}

// startLoops starts loopOrganism over m in process.
func startLoops(t *testing.T, m *llmtest.ChatModel) *organism.Local {
	t.Helper()
	l, err := organism.Assemble(organism.Options{Logger: slog.New(slog.DiscardHandler)}, loopOrganism(m.URL))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Organism().Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Organism().Shutdown(context.Background()) })
	return l
}

// waitScreen waits until text is on the screen, up to a minute (a loaded
// machine runs the organism, the model and the terminal slowly).
func waitScreen(t *testing.T, s *screen, text string) {
	t.Helper()
	timeout := time.NewTimer(time.Minute)
	defer timeout.Stop()
	for !strings.Contains(s.String(), text) {
		select {
		case <-s.changed:
		case <-timeout.C:
			t.Fatalf("%q did not appear; screen:\n%q", text, s.String())
		}
	}
}
