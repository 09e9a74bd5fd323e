package pump_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestTwinPeerViolationsAreDistinctEvents: two identical peer violations
// of one agent's output — the same payload to the same non-peer, sent
// twice in one reply, as raw text or as two sends without a ref — are two
// SystemError events a transport can tell apart (their frame ids differ),
// not two copies of one.
func TestTwinPeerViolationsAreDistinctEvents(t *testing.T) {
	for _, tc := range []struct {
		name    string
		respond func() xmlpipe.Response
	}{
		{"raw", func() xmlpipe.Response {
			return xmlpipe.Raw([]byte(`<Pong><Text>x</Text></Pong><Pong><Text>x</Text></Pong>`))
		}},
		{"sends", func() xmlpipe.Response {
			return xmlpipe.SendAll(&xmlpipe.SendResponse{To: "other", Payload: &Pong{Text: "x"}},
				&xmlpipe.SendResponse{To: "other", Payload: &Pong{Text: "x"}})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bot := agent(listenerOf(t, "bot", func(context.Context, *Ping, xmlpipe.Metadata) (xmlpipe.Response, error) {
				return tc.respond(), nil
			}))
			bot = withErrorHandler(bot, func(context.Context, *xmlpipe.DeliveryError, xmlpipe.Metadata) (xmlpipe.Response, error) {
				return nil, nil
			})
			p := startPump(t, pump.Options{}, bot, sink[Pong](t, "other", newProbe()))
			events := newRecorder()
			p.Subscribe(events)
			mustSend(t, p, client, "bot", &Ping{Text: "go"}, newRecorder())
			events.waitN(t, "two system-error events", 2, kind(pump.EventSystemError))
			var ses []pump.Event
			for _, e := range events.snapshot() {
				if e.Kind == pump.EventSystemError {
					ses = append(ses, e)
				}
			}
			if diff := cmp.Diff(ses[0], ses[1], cmpopts.IgnoreFields(pump.Event{}, "Time"),
				cmpopts.IgnoreUnexported(xmlpipe.SystemError{})); diff == "" {
				t.Errorf("the two violations are one event told twice: %+v", ses[0])
			}
			if ses[0].About == "" || ses[0].About == ses[1].About {
				t.Errorf("the violations are about %q and %q, want two places of the reply", ses[0].About, ses[1].About)
			}
		})
	}
}
