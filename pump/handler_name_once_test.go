package pump_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestHandlerErrorNamesListenerOnce: a handler that wraps its own error with
// its listener's name ("relay: …") is not named twice in the <huh> the
// operator reads; one that does not is named once by the pump.
func TestHandlerErrorNamesListenerOnce(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"bare", errors.New("boom"), "handler: handler failed: relay: boom"},
		{"self-named", fmt.Errorf("relay: %w", errors.New("boom")), "handler: handler failed: relay: boom"},
		{"self-named input error", fmt.Errorf("relay: %w", &xmlpipe.InputError{Err: errors.New("bad city")}),
			"handler: handler failed: relay: bad city"},
		{"a name that only starts alike", errors.New("relayed: boom"), "handler: handler failed: relay: relayed: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fail := func(context.Context, *Ping, xmlpipe.Metadata) (xmlpipe.Response, error) { return nil, tt.err }
			p := startPump(t, pump.Options{}, listenerOf(t, "relay", fail))
			out := newRecorder()
			mustSend(t, p, client, "relay", &Ping{Text: "x"}, out)
			out.waitFor(t, "a huh", kind(pump.EventHuh))
			var e pump.Event
			for _, ev := range out.snapshot() {
				if ev.Kind == pump.EventHuh {
					e = ev
				}
			}
			if diff := cmp.Diff([]string{tt.want}, e.Diagnostics); diff != "" {
				t.Errorf("huh diagnostics (-want +got):\n%s", diff)
			}
		})
	}
}
