package console_test

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// TestConsoleKillOfACompletedConversation: /kill naming a conversation that
// has completed (its history kept for a continuation, its thread ended)
// says there was nothing to kill — not "Killed" — and this
// console begins a new conversation at the agent's next line, in process
// and over --connect.
func TestConsoleKillOfACompletedConversation(t *testing.T) {
	answered := regexp.MustCompile(`\[researcher\] It is Tuesday\.`)
	nothing := regexp.MustCompile(`Nothing to kill: \[researcher#([0-9a-f]{8})\] conversation already ended; ` +
		`the next @researcher line begins a new conversation`)
	check := func(t *testing.T, b organism.Backend) {
		t.Helper()
		in, out, done := interactive(t, b)
		fmt.Fprintln(in, "@researcher what day is it?")
		out.waitFor(t, answered)
		fmt.Fprintln(in, "/kill researcher")
		first := out.waitFor(t, nothing)[1]
		fmt.Fprintln(in, "@researcher and tomorrow?")
		out.waitFor(t, regexp.MustCompile(`(?s)Nothing to kill:.*\[researcher\] It is Tuesday\.`))
		fmt.Fprintln(in, "/kill researcher")
		second := out.waitFor(t, regexp.MustCompile(`(?s)Nothing to kill:.*Nothing to kill: \[researcher#([0-9a-f]{8})\] conversation already ended`))[1]
		fmt.Fprintln(in, "/quit")
		if err := <-done; err != nil {
			t.Fatalf("run: %v\n%s", err, out)
		}
		if strings.Contains(out.String(), "Killed:") {
			t.Errorf("a completed conversation was reported killed:\n%s", out)
		}
		if first == second {
			t.Errorf("the line after /kill continued conversation %s, want a new one:\n%s", first, out)
		}
	}

	t.Run("in process", func(t *testing.T) {
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
		check(t, l)
	})

	t.Run("over --connect", func(t *testing.T) {
		path := governedConfig(t, "It is Tuesday.")
		b := startBusWith(t, func(o organism.Options) (*organism.Organism, error) { return organism.Load(path, o) })
		check(t, b.dial(t, "olga", b.user(t, "olga", auth.Operator)))
	})
}
