package federation

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump"
)

// TestDeepCycleOutnumbersNoImportWorkers: a cycle between two organisms
// allowed to nest more calls through one import than the import has
// workers (2 here, with a max_chain_depth of 4 hops per round: 6 nested
// calls through each import) must still meet max_chain_depth, not stall
// with every worker holding a pending call while the next nested call
// waits in the queue for one — until call_timeout, minutes later.
func TestDeepCycleOutnumbersNoImportWorkers(t *testing.T) {
	const maxDepth, workers = 24, 2
	cp := newCyclePairWorkers(t, maxDepth, 0, workers)
	ev, err := cp.ask(t)
	if err == nil {
		t.Fatalf("the cycle ended without an error: %+v", ev)
	}
	var ae *pump.AskError
	if !errors.As(err, &ae) {
		t.Fatalf("ask: %v (%T), want an *pump.AskError", err, err)
	}
	why := fmt.Sprintf("The conversation exceeded its hop limit: a call that had made %d hops reached organism a, "+
		"which allows %d (max_chain_depth); it was not run, and the conversations that made it were stopped.",
		maxDepth, maxDepth)
	if diff := cmp.Diff(why, ae.Event.Error); diff != "" {
		t.Errorf("what the asker is told (-want +got):\n%s", diff)
	}
}
