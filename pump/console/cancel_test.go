package console_test

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// TestConsoleCancelsAnAnswer: /cancel <agent> stops the answer in flight
// of this console's conversation with it — its call waiting for a human
// is dropped with its approval — and keeps the conversation: the console
// says so once, and the agent's next line continues the same conversation
// and is answered. /cancel with nothing answering says so.
func TestConsoleCancelsAnAnswer(t *testing.T) {
	cancelled := regexp.MustCompile(`researcher#([0-9a-f]{8}) cancelled; the conversation goes on`)
	path := governedConfig(t, "<RunCommand><Command>date</Command></RunCommand>", "It ran.")
	l, err := organism.Assemble(organism.Options{Logger: slog.New(slog.DiscardHandler)},
		func(o organism.Options) (*organism.Organism, error) { return organism.Load(path, o) })
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Organism().Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Organism().Shutdown(context.Background()) })
	in, out, done := interactive(t, l)
	fmt.Fprintln(in, "/cancel")
	out.waitFor(t, regexp.MustCompile(`Nothing to cancel: none of this console's conversations is answering`))
	fmt.Fprintln(in, "@researcher what day is it?")
	id := out.waitFor(t, waiting)[1]
	fmt.Fprintln(in, "/cancel researcher")
	conv := out.waitFor(t, cancelled)[1]
	out.waitFor(t, regexp.MustCompile(`\[approval\] `+id+` expired`))
	fmt.Fprintln(in, "@researcher never mind, just say it ran")
	out.waitFor(t, regexp.MustCompile(`\[researcher\] It ran\.`))
	fmt.Fprintln(in, "/threads")
	out.waitFor(t, regexp.MustCompile(`researcher#`+conv+`\s+@researcher continues it`))
	fmt.Fprintln(in, "/quit")
	if err := <-done; err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	if n := strings.Count(out.String(), "cancelled; the conversation goes on"); n != 1 {
		t.Errorf("the cancel is told %d times, want once:\n%s", n, out)
	}
	if strings.Contains(out.String(), "begins a new conversation") {
		t.Errorf("the cancel ended the conversation:\n%s", out)
	}
}
