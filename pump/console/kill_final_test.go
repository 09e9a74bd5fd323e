package console_test

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"sync"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// killedElsewhere is a backend on which the conversation refuse names was
// killed by someone else (the API, the dashboard): a Send continuing it
// fails as the organism's does, wrapping ErrConversationKilled.
type killedElsewhere struct {
	organism.Backend
	mu     sync.Mutex
	refuse string
	sends  []string // the thread of each Send that was not refused
}

func (k *killedElsewhere) Send(ctx context.Context, m organism.Message) (string, error) {
	k.mu.Lock()
	refused := m.Thread != "" && m.Thread == k.refuse
	k.mu.Unlock()
	if refused {
		return "", fmt.Errorf("%w: %s: start a new one", organism.ErrConversationKilled, m.Thread)
	}
	thread, err := k.Backend.Send(ctx, m)
	k.mu.Lock()
	k.sends = append(k.sends, thread)
	k.mu.Unlock()
	return thread, err
}

// kill makes the backend refuse the first conversation it sent on.
func (k *killedElsewhere) kill() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.refuse = k.sends[0]
	return k.refuse
}

// TestConsoleLineOnAConversationKilledElsewhere: when the console's
// conversation with an agent was killed elsewhere, its next line to the
// agent is refused; the console says the conversation was killed and
// begins a new conversation at the line after, which the agent answers.
func TestConsoleLineOnAConversationKilledElsewhere(t *testing.T) {
	path := governedConfig(t, "It is Tuesday.")
	l, err := organism.Assemble(organism.Options{Logger: slog.New(slog.DiscardHandler)},
		func(o organism.Options) (*organism.Organism, error) { return organism.Load(path, o) })
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Organism().Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Organism().Shutdown(context.Background()) })
	b := &killedElsewhere{Backend: l}
	in, out, done := interactive(t, b)
	fmt.Fprintln(in, "@researcher what day is it?")
	out.waitFor(t, regexp.MustCompile(`\[researcher\] It is Tuesday\.`))
	killed := b.kill()
	fmt.Fprintln(in, "@researcher and tomorrow?")
	out.waitFor(t, regexp.MustCompile(`\[researcher#`+killed[:8]+`\] conversation was killed; `+
		`the next @researcher line begins a new conversation`))
	fmt.Fprintln(in, "@researcher and now?")
	out.waitFor(t, regexp.MustCompile(`(?s)conversation was killed.*\[researcher\] It is Tuesday\.`))
	fmt.Fprintln(in, "/quit")
	if err := <-done; err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
}
