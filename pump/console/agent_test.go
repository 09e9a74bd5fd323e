package console_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/term"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/llmtest"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/console"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// agentOrganism builds an organism whose agent poet talks to the model at url.
func agentOrganism(url string) func(organism.Options) (*organism.Organism, error) {
	return func(o organism.Options) (*organism.Organism, error) {
		cfg, err := config.Parse("organism.yaml", []byte(`organism: {name: chat}
llm:
  retries: 0
  backends:
    - provider: openai
      name: local
      base_url: `+url+`
      model: test-model
listeners:
  - name: poet
    agent: true
    description: Writes short poems
    prompt: You are poet.
`))
		if err != nil {
			return nil, err
		}
		return organism.New(cfg, o)
	}
}

// startAgents starts an in-memory agent organism over m with a console
// backend and waits for its boot.
func startAgents(t *testing.T, m *llmtest.ChatModel) *organism.Local {
	t.Helper()
	l, err := organism.Assemble(organism.Options{Logger: slog.New(slog.DiscardHandler)}, agentOrganism(m.URL))
	if err != nil {
		t.Fatal(err)
	}
	o := l.Organism()
	booted := make(chan string, 8)
	stop := o.Pump.Subscribe(pump.OutletFunc(func(e pump.Event) {
		if e.Kind == pump.EventComplete {
			booted <- e.Conversation
		}
	}))
	defer stop()
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := o.Shutdown(context.Background()); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	for conv := range booted {
		if conv == o.BootThread {
			break
		}
	}
	return l
}

// answers replies "answer N" to the N-th request (from 1), in two chunks.
func answers(n int) []string { return []string{"answer ", fmt.Sprint(n + 1)} }

// checkContinuation checks the model's requests of a session that sent
// "@poet first", "@poet second", "/new poet", "@poet third": the second
// carries the first exchange, the third does not.
func checkContinuation(t *testing.T, m *llmtest.ChatModel, transcript string) {
	t.Helper()
	second, third := m.Request(t, 1), m.Request(t, 2)
	if !llmtest.Has(second, "user", "first") || !llmtest.Has(second, "assistant", "answer 1") || !llmtest.Has(second, "user", "second") {
		t.Errorf("the second request lacks the first exchange: %+v", second)
	}
	if llmtest.Has(third, "user", "first") || llmtest.Has(third, "assistant", "answer") || !llmtest.Has(third, "user", "third") {
		t.Errorf("the request after /new carries an old exchange: %+v", third)
	}
	for _, want := range []string{"[poet] answer 1\n", "[poet] answer 2\n", "[poet] answer 3\n",
		"Left poet#"} {
		if strings.Count(transcript, want) != 1 {
			t.Errorf("transcript has %q %d times, want once:\n%s", want, strings.Count(transcript, want), transcript)
		}
	}
}

// checkUsage checks the /usage of a session that made three calls of 11 +
// 7 tokens: the totals, and each call on its line — linked to the envelope
// it produced when the organism is durable.
func checkUsage(t *testing.T, transcript string, linked bool) {
	t.Helper()
	for _, want := range []string{"  poet                 33 + 21 = 54 tokens, 3 requests\n",
		"  local                33 + 21 = 54 tokens, 3 requests\n", "Last calls (newest last, at most 10):\n"} {
		if !strings.Contains(transcript, want) {
			t.Errorf("/usage lacks %q:\n%s", want, transcript)
		}
	}
	var calls []string
	for _, line := range strings.Split(transcript, "\n") {
		if strings.Contains(line, "  poet#") && strings.Contains(line, "local/test-model") {
			calls = append(calls, line)
		}
	}
	if len(calls) != 3 {
		t.Fatalf("/usage lists %d calls, want 3:\n%s", len(calls), transcript)
	}
	for i, line := range calls {
		// A call is linked to its envelope once the journal event of the
		// agent's output reaches the organism, which may come after the
		// reply reached the console: the newest call's link may be due
		// still when /usage follows its answer at once.
		due := linked && i == len(calls)-1 && !strings.Contains(line, "→ #")
		if !strings.Contains(line, "11 + 7 tokens  first ") || !strings.Contains(line, " stop") ||
			strings.Contains(line, "→ #") != linked && !due {
			t.Errorf("call line %q", line)
		}
	}
}

// TestConsoleContinuesConversation: successive @poet lines continue one
// conversation — the model's second request holds the first exchange —
// until /new poet; a piped session prints each answer once, whole.
func TestConsoleContinuesConversation(t *testing.T) {
	m := llmtest.NewChatModel(t, answers)
	l := startAgents(t, m)
	c, err := console.New(l, console.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	in := "@poet first\n@poet second\n/threads\n/new poet\n@poet third\n/usage\n/quit\n"
	if err := c.Run(context.Background(), strings.NewReader(in), &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	checkContinuation(t, m, out.String())
	checkUsage(t, out.String(), false)
	if !strings.Contains(out.String(), "Conversations (an @agent line continues its own; /new begins another):\n  poet#") {
		t.Errorf("/threads does not list the conversation:\n%s", out.String())
	}
	if !m.Streamed(t, 0) {
		t.Error("the agent did not ask the model for a stream")
	}
}

// TestRemoteConsoleContinuesConversation is the same over the main bus
// (/ws send with thread_id), with the organism durable.
func TestRemoteConsoleContinuesConversation(t *testing.T) {
	m := llmtest.NewChatModel(t, answers)
	b := startBusWith(t, agentOrganism(m.URL))
	r := b.dial(t, "rita", b.user(t, "rita", auth.Operator))
	c, err := console.New(r, console.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), remoteWait)
	defer cancel()
	in := "@poet first\n@poet second\n/new poet\n@poet third\n/usage\n/quit\n"
	if err := c.Run(ctx, strings.NewReader(in), &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	checkContinuation(t, m, out.String())
	checkUsage(t, out.String(), true)
}

// screen records what a test terminal shows.
type screen struct {
	mu      sync.Mutex
	buf     strings.Builder
	changed chan struct{}
}

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

// rendered is what a terminal shows after the bytes written so far: the
// cursor moves, line and screen clears the console and x/term send are
// applied (CSI n A/B/C/D, K, J; CR, LF), so a live line erased and printed
// again counts once, as the user sees it.
func (s *screen) rendered() []string {
	raw := []rune(s.String())
	lines := [][]rune{nil}
	row, col := 0, 0
	for i := 0; i < len(raw); i++ {
		switch r := raw[i]; {
		case r == '\x1b' && i+1 < len(raw) && raw[i+1] == '[':
			j, n := i+2, 0
			for j < len(raw) && raw[j] >= '0' && raw[j] <= '9' {
				n = n*10 + int(raw[j]-'0')
				j++
			}
			if j == len(raw) {
				i = j
				break
			}
			if n == 0 {
				n = 1
			}
			switch raw[j] {
			case 'A':
				row = max(0, row-n)
			case 'B':
				row += n
			case 'C':
				col += n
			case 'D':
				col = max(0, col-n)
			case 'K':
				lines[row] = lines[row][:min(col, len(lines[row]))]
			case 'J':
				lines[row] = lines[row][:min(col, len(lines[row]))]
				lines = lines[:row+1]
			}
			for len(lines) <= row {
				lines = append(lines, nil)
			}
			i = j
		case r == '\r':
			col = 0
		case r == '\n':
			row++
			for len(lines) <= row {
				lines = append(lines, nil)
			}
		default:
			for len(lines[row]) < col {
				lines[row] = append(lines[row], ' ')
			}
			if col < len(lines[row]) {
				lines[row][col] = r
			} else {
				lines[row] = append(lines[row], r)
			}
			col++
		}
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = string(l)
	}
	return out
}

// countLines counts the rendered lines holding text.
func countLines(lines []string, text string) int {
	n := 0
	for _, l := range lines {
		if strings.Contains(l, text) {
			n++
		}
	}
	return n
}

// waitFor waits until text appears on the screen n times.
func (s *screen) waitFor(t *testing.T, text string, n int) {
	t.Helper()
	timeout := time.NewTimer(remoteWait)
	defer timeout.Stop()
	for strings.Count(s.String(), text) < n {
		select {
		case <-s.changed:
		case <-timeout.C:
			t.Fatalf("%q did not appear %d times; screen:\n%q", text, n, s.String())
		}
	}
}

// TestTerminalStreamsAsItArrives: on a terminal an agent's text shows while
// the model is still writing it — its unfinished line live above the
// prompt — and the answer then adds only what was not shown; the prompt
// names the conversation.
func TestTerminalStreamsAsItArrives(t *testing.T) {
	m := llmtest.NewChatModel(t, func(int) []string { return []string{"Rain on tin", " roofs\nhums softly."} })
	m.Hold = make(chan struct{})
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
	}{in, scr}, "")
	done := make(chan error, 1)
	go func() { done <- c.RunTerminal(context.Background(), tm) }()
	scr.waitFor(t, "> ", 1)
	if _, err := io.WriteString(typing, "@poet rain\r"); err != nil {
		t.Fatal(err)
	}
	<-m.First
	scr.waitFor(t, "[poet] Rain on tin\r\n", 1) // the live line, before the model finished
	if strings.Contains(scr.String(), "hums") {
		t.Fatalf("text shown before the model wrote it:\n%q", scr.String())
	}
	close(m.Hold)
	scr.waitFor(t, "hums softly.\r\n", 1)
	scr.waitFor(t, "poet#", 1) // the prompt names the conversation
	// The end of input (not a typed /quit, whose echoed line could race the
	// answer's redraw of the live line) ends the session once the
	// conversation has answered.
	if err := typing.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("RunTerminal: %v", err)
	}
	// What the user sees: a live line erased and printed again in place
	// shows once.
	got, shown := scr.String(), scr.rendered()
	if n := countLines(shown, "[poet] Rain on tin roofs"); n != 1 {
		t.Errorf("the first line shows %d times, want once:\n%q", n, shown)
	}
	if n := countLines(shown, "hums softly."); n != 1 {
		t.Errorf("the answer's last line shows %d times, want once:\n%q", n, shown)
	}
	if !strings.Contains(got, "\x1b[1A\r\x1b[J") {
		t.Errorf("the live line was never redrawn in place:\n%q", got)
	}
}

// TestConsoleKilledConversationBeginsAnew: a conversation killed while its
// agent answers is reported as killed, and the next @ line to that agent
// begins a new conversation instead of continuing one whose history ends
// in an unanswered question.
func TestConsoleKilledConversationBeginsAnew(t *testing.T) {
	asked, release := make(chan struct{}), make(chan struct{})
	m := llmtest.NewChatModel(t, func(n int) []string {
		if n == 0 {
			close(asked)
			<-release // the first answer never comes: its conversation is killed
		}
		return answers(n)
	})
	t.Cleanup(func() { close(release) }) // before the model server closes
	l := startAgents(t, m)
	convs := make(chan string, 4)
	stop := l.Organism().Pump.Subscribe(pump.OutletFunc(func(e pump.Event) {
		if e.Kind == pump.EventMessage && e.Listener == "poet" {
			convs <- e.Conversation
		}
	}))
	defer stop()
	c, err := console.New(l, console.Config{})
	if err != nil {
		t.Fatal(err)
	}
	in, feed := io.Pipe()
	var out strings.Builder
	done := make(chan error, 1)
	go func() { done <- c.Run(context.Background(), in, &out) }()
	if _, err := io.WriteString(feed, "@poet first\n"); err != nil {
		t.Fatal(err)
	}
	<-asked
	conv := <-convs
	if _, err := l.Organism().Pump.Kill(conv); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(feed, "@poet second\n/quit\n"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if want := "[poet#" + conv[:8] + "] conversation killed; the next @poet line begins a new conversation\n"; !strings.Contains(out.String(), want) {
		t.Errorf("the transcript lacks %q:\n%s", want, out.String())
	}
	if second := m.Request(t, 1); llmtest.Has(second, "user", "first") || !llmtest.Has(second, "user", "second") {
		t.Errorf("the line after the kill continued the killed conversation: %+v", second)
	}
	if !strings.Contains(out.String(), "[poet] answer 2\n") {
		t.Errorf("the new conversation's answer is missing:\n%s", out.String())
	}
}
