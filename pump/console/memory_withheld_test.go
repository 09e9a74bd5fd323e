package console_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// TestRemoteConsoleHistoryWithholdsMemory: over a connection, the history
// /buffer shows holds what an agent asked to remember for the
// conversation's owner only; another user sees that the request was made
// (keeper -> system.memory) and "(withheld: …)" in place of its text.
func TestRemoteConsoleHistoryWithholdsMemory(t *testing.T) {
	path := rememberingConfig(t, "Prefers oolong")
	b := startBusWith(t, func(o organism.Options) (*organism.Organism, error) { return organism.Load(path, o) })
	olga := b.dial(t, "olga", b.user(t, "olga", auth.Operator))
	in, out, done := interactive(t, olga)
	fmt.Fprintln(in, "@keeper remember what tea I like")
	out.waitFor(t, regexp.MustCompile(`\[keeper\] Kept\.`))
	fmt.Fprintln(in, "/monitor *")
	tid := out.waitFor(t, regexp.MustCompile(`--- Thread ([0-9a-f]{8}) ---\n\s+\[websocket:olga -> keeper\]`))[1]
	fmt.Fprintln(in, "/buffer "+tid)
	out.waitFor(t, regexp.MustCompile(`keeper -> system\.memory: Remember\n\s+<Remember><Content>Prefers oolong`))
	fmt.Fprintln(in, "/quit")
	if err := <-done; err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}

	vic := b.dial(t, "vic", b.user(t, "vic", auth.Viewer))
	vin, vout, vdone := interactive(t, vic)
	fmt.Fprintln(vin, "/buffer "+tid)
	vout.waitFor(t, regexp.MustCompile(`keeper -> system\.memory: Remember\n\s+\(withheld: `))
	fmt.Fprintln(vin, "/quit")
	if err := <-vdone; err != nil {
		t.Fatalf("run: %v\n%s", err, vout)
	}
	if strings.Contains(fmt.Sprint(vout), "oolong") {
		t.Errorf("another user's history holds the memory's text:\n%s", vout)
	}
}
