package main

import (
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/oob"
)

// TestCtlOutwaitsTheOrganism: ctl waits for an operation's answer longer
// than the organism may wait inside it. unregister-listener waits up to
// 60 s for the conversations using the listener (README, "Control it");
// ctl used to give up after 30 s with "context deadline exceeded" while
// the organism went on to remove the listener.
func TestCtlOutwaitsTheOrganism(t *testing.T) {
	for _, tc := range []struct {
		op      string
		atLeast time.Duration // the organism's own bound, as documented
	}{
		{"unregister-listener", 60 * time.Second},
		{"inject-message", 30 * time.Second},
		{"unregister-remote-gateway", 30 * time.Second},
		// A reload relinks changed gateways for up to 30 s after building
		// what it adds (MCP servers started, WASM modules compiled).
		{"reload", 60 * time.Second},
		{"get-status", 0},
	} {
		if got := ctlRequestTimeout(tc.op); got <= tc.atLeast {
			t.Errorf("ctl waits %s for %s, the organism up to %s", got, tc.op, tc.atLeast)
		}
	}
	for _, op := range oob.OperationNames() {
		if got, server := ctlRequestTimeout(op), oob.AnswerWithin(op); got-server < 10*time.Second {
			t.Errorf("ctl waits %s for %s, leaving less than 10 s beyond the organism's %s", got, op, server)
		}
	}
}
