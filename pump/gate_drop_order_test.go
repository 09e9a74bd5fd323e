package pump_test

import (
	"errors"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
)

// The gate hears of a hold a kill or a cancel dropped before the
// conversation's completion is published: a transport routing the
// conversation's news to its clients until the completion can still tell
// them how the hold's approval ended.
func TestGateToldOfADroppedHoldBeforeTheCompletion(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stop  func(*pump.Pump, string) (string, error)
		cause error
	}{
		{"kill", (*pump.Pump).Kill, pump.ErrConversationKilled},
		{"cancel", (*pump.Pump).Cancel, pump.ErrCancelled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGateOrganism(t)
			// What the gate had been told when the completion came.
			atCompletion := make(chan error, 1)
			conv := g.ask(t, "hold forever", pump.OutletFunc(func(e pump.Event) {
				if e.Kind == pump.EventComplete {
					atCompletion <- g.gate.droppedCause("h-tool")
				}
			}))
			waitHeld(t, g.p, "h-tool")
			if _, err := tc.stop(g.p, conv); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			select {
			case cause := <-atCompletion:
				if !errors.Is(cause, tc.cause) {
					t.Fatalf("the gate's Dropped cause at the completion: %v, want %v", cause, tc.cause)
				}
			case <-time.After(waitTimeout):
				t.Fatal("timed out waiting for the completion")
			}
		})
	}
}
