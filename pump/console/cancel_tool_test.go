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

	"github.com/xml-pipeline/xmlpipe/listeners/llm/llmtest"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/console"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// cancelWait bounds the waits of the tests of /cancel while a tool runs:
// generous, for a loaded 2-core machine under -race.
const cancelWait = 2 * time.Minute

// toolRun is an organism whose agent poet, asked anything first, calls
// run_command sleep (100 seconds unless told), and answers "a short
// answer" every time after.
type toolRun struct {
	l *organism.Local
	o *organism.Organism
	m *llmtest.ChatModel
	// running is closed once run_command got poet's call; cancelled once
	// a conversation completed with its answer cancelled, killed once one
	// completed killed.
	running, cancelled, killed chan struct{}
}

// startToolRun starts a toolRun, shut down when the test ends.
func startToolRun(t *testing.T) *toolRun { return startToolRunFor(t, 100) }

// startToolRunFor starts a toolRun whose tool call sleeps seconds.
func startToolRunFor(t *testing.T, seconds int) *toolRun {
	t.Helper()
	m := llmtest.NewChatModel(t, func(n int) []string {
		if n == 0 {
			return []string{llmtest.ToolCall("call_1", "run_command", fmt.Sprintf(`{"Command":"sleep","Arg":["%d"]}`, seconds))}
		}
		return []string{"a short ", "answer"}
	})
	l, err := organism.Assemble(organism.Options{Logger: slog.New(slog.DiscardHandler)},
		func(o organism.Options) (*organism.Organism, error) {
			cfg, err := config.Parse("organism.yaml", []byte(`organism: {name: chat}
llm:
  retries: 0
  backends:
    - provider: openai
      name: local
      base_url: `+m.URL+`
      model: test-model
listeners:
  - name: poet
    agent: true
    description: Runs commands
    prompt: You are poet.
    tools: [run_command]
    tool_config:
      run_command: {allowed_commands: [{command: sleep, args: ["{int}"]}]}
`))
			if err != nil {
				return nil, err
			}
			return organism.New(cfg, o)
		})
	if err != nil {
		t.Fatal(err)
	}
	o := l.Organism()
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := o.Shutdown(context.Background()); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	r := &toolRun{l: l, o: o, m: m, running: make(chan struct{}), cancelled: make(chan struct{}), killed: make(chan struct{})}
	var runOnce, doneOnce, killOnce sync.Once
	t.Cleanup(o.Pump.Subscribe(pump.OutletFunc(func(e pump.Event) {
		switch {
		case e.Kind == pump.EventMessage && e.Listener == "run_command":
			runOnce.Do(func() { close(r.running) })
		case e.Kind == pump.EventComplete && e.Error == pump.CancelledReason:
			doneOnce.Do(func() { close(r.cancelled) })
		case e.Kind == pump.EventComplete && e.Error == pump.KilledReason:
			killOnce.Do(func() { close(r.killed) })
		}
	})))
	return r
}

// session runs a piped console session over b with cfg: feed writes
// input lines, done gets what Run returned, out is its transcript.
func (r *toolRun) session(t *testing.T, b organism.Backend, cfg console.Config) (feed func(string), done <-chan error, out *transcript) {
	t.Helper()
	c, err := console.New(b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	in, w := io.Pipe()
	t.Cleanup(func() { _ = w.Close() })
	out = &transcript{} // read on a hang while the session still writes
	ran := make(chan error, 1)
	go func() { ran <- c.Run(context.Background(), in, out) }()
	feed = func(s string) {
		t.Helper()
		if _, err := io.WriteString(w, s); err != nil {
			t.Fatal(err)
		}
	}
	return feed, ran, out
}

// await waits for ch, failing the test as what after cancelWait.
func await(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(cancelWait):
		t.Fatalf("%s: not within %v", what, cancelWait)
	}
}

// ended checks that the session ended without error within cancelWait
// having answered the line after /cancel.
func (r *toolRun) ended(t *testing.T, done <-chan error, out *transcript) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v\n%s", err, out.String())
		}
	case <-time.After(cancelWait):
		t.Fatalf("the session did not end after /quit: the line after /cancel hangs (%d messages in flight, "+
			"the model asked %d times); the session printed:\n%s", r.o.Pump.InFlight(), r.m.Count(), out.String())
	}
	if !strings.Contains(out.String(), "[poet] a short answer\n") || strings.Contains(out.String(), "ended without an answer") {
		t.Errorf("the line after /cancel was not answered:\n%s", out.String())
	}
}

// TestConsoleCancelWhileAToolRuns: /cancel while the agent waits for the
// tool listener its reply called (run_command sleep 100) keeps the
// conversation, and the next @poet line is answered — not "(ended without
// an answer)" — with the model reading the call as cancelled and the note
// that the user cancelled the previous answer.
func TestConsoleCancelWhileAToolRuns(t *testing.T) {
	r := startToolRun(t)
	write, done, out := r.session(t, r.l, console.Config{})
	write("@poet count slowly\n")
	await(t, "run_command got the agent's call", r.running)
	write("/cancel\n")
	await(t, "the conversation completed cancelled", r.cancelled)
	write("@poet never mind\n/quit\n")
	r.ended(t, done, out)
	second := r.m.Request(t, 1)
	for _, want := range []llmtest.Message{{Role: "tool", Content: "Cancelled while it ran"},
		{Role: "user", Content: "[the user cancelled the previous answer]"}, {Role: "user", Content: "never mind"}} {
		if !llmtest.Has(second, want.Role, want.Content) {
			t.Errorf("the model's request after /cancel lacks %s %q: %+v", want.Role, want.Content, second)
		}
	}
}
