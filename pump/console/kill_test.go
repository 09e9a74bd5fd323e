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

// TestConsoleKillsAConversation: /kill stops a conversation for good — named
// by its agent, or by the start of its thread id — in process and over
// --connect (an operator their own, an admin anyone's); the console says so
// once, and the agent's next line begins a new conversation.
func TestConsoleKillsAConversation(t *testing.T) {
	killed := regexp.MustCompile(`Killed: \[researcher#([0-9a-f]{8})\] conversation killed; the next @researcher line begins a new conversation`)

	t.Run("in process, by agent", func(t *testing.T) {
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
		fmt.Fprintln(in, "/kill")
		out.waitFor(t, regexp.MustCompile(`Usage: /kill <agent>\|<tid>`))
		fmt.Fprintln(in, "@researcher what day is it?")
		id := out.waitFor(t, waiting)[1]
		fmt.Fprintln(in, "/kill researcher")
		conv := out.waitFor(t, killed)[1]
		out.waitFor(t, regexp.MustCompile(`\[approval\] `+id+` expired`))
		fmt.Fprintln(in, "/kill researcher")
		out.waitFor(t, regexp.MustCompile(`no agent of this console's conversations and no live thread matches researcher`))
		fmt.Fprintln(in, "/kill "+conv)
		out.waitFor(t, regexp.MustCompile(`no agent of this console's conversations and no live thread matches `+conv))
		fmt.Fprintln(in, "/quit")
		if err := <-done; err != nil {
			t.Fatalf("run: %v\n%s", err, out)
		}
		if n := strings.Count(out.String(), "] conversation killed"); n != 1 {
			t.Errorf("the kill is told %d times, want once:\n%s", n, out)
		}
		if l.Organism().Pump.Stats().InFlight != 0 {
			t.Errorf("messages still in flight after the kill")
		}
	})

	t.Run("over --connect", func(t *testing.T) {
		path := governedConfig(t, "<RunCommand><Command>date</Command></RunCommand>",
			"<RunCommand><Command>date</Command></RunCommand>", "It ran.")
		b := startBusWith(t, func(o organism.Options) (*organism.Organism, error) {
			return organism.Load(path, o)
		})
		olga := b.dial(t, "olga", b.user(t, "olga", auth.Operator))
		in, out, done := interactive(t, olga)
		fmt.Fprintln(in, "@researcher what day is it?")
		out.waitFor(t, waiting)
		fmt.Fprintln(in, "/threads")
		first := out.waitFor(t, regexp.MustCompile(`researcher#([0-9a-f]{8})\s+@researcher continues it; answering`))[1]

		// Another operator sees it but may not kill it.
		bob := b.dial(t, "bob", b.user(t, "bob", auth.Operator))
		bin, bout, bdone := interactive(t, bob)
		fmt.Fprintln(bin, "/kill "+first)
		bout.waitFor(t, regexp.MustCompile(`Cannot kill `+first+`: no live conversation you may stop has that thread`))
		fmt.Fprintln(bin, "/quit")
		if err := <-bdone; err != nil {
			t.Fatalf("run: %v\n%s", err, bout)
		}

		// Olga kills her own.
		fmt.Fprintln(in, "/kill researcher")
		out.waitFor(t, regexp.MustCompile(`Killed: \[researcher#`+first+`\] conversation killed`))

		// An admin kills anyone's, named by the start of its id.
		fmt.Fprintln(in, "@researcher and now?")
		out.waitFor(t, regexp.MustCompile(`(?s)\[approval\].*\[approval\] ([0-9a-f]+): researcher → run_command waits for a human`))
		fmt.Fprintln(in, "/threads")
		second := out.waitFor(t, regexp.MustCompile(`(?s)Killed:.*researcher#([0-9a-f]{8})\s+@researcher continues it; answering`))[1]
		admin := b.dial(t, "ada", b.user(t, "ada", auth.Admin))
		ain, aout, adone := interactive(t, admin)
		fmt.Fprintln(ain, "/kill "+second[:6])
		aout.waitFor(t, regexp.MustCompile(`Killed: \[`+second+`\] conversation killed`))
		fmt.Fprintln(ain, "/quit")
		if err := <-adone; err != nil {
			t.Fatalf("run: %v\n%s", err, aout)
		}
		// Olga's console hears her conversation ended, and begins anew.
		out.waitFor(t, regexp.MustCompile(`\[researcher#`+second+`\] conversation killed; the next @researcher line begins a new conversation`))
		fmt.Fprintln(in, "/quit")
		if err := <-done; err != nil {
			t.Fatalf("run: %v\n%s", err, out)
		}
	})
}
