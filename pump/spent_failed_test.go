package pump_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// errChainFailed is the failure of a chain's hop in the tests below.
var errChainFailed = errors.New("hop failed")

// TestFailedHopEndsWithItsConversation: a hop that can be answered no more
// — its handler failed (an error, a panic; its sender got a <huh>), or its
// message was refused before any handler saw it (no route, outside the
// thread's profile) — ends with its conversation, and so does the spent
// chain above it: once the conversation completes only its root is live,
// not the failed hop's thread (and its sender's) until the TTL.
func TestFailedHopEndsWithItsConversation(t *testing.T) {
	tests := []struct {
		name string
		// b is b's handler; c's handler fails with errChainFailed.
		b func(in *ChainB) (xmlpipe.Response, error)
		// profiles, when set, are the pump's and the conversation runs
		// under the first.
		profiles []pump.ProfileDef
	}{
		{
			name: "b fails",
			b:    func(*ChainB) (xmlpipe.Response, error) { return nil, errChainFailed },
		},
		{
			name: "b panics",
			b:    func(*ChainB) (xmlpipe.Response, error) { panic(errChainFailed) },
		},
		{
			name: "c fails",
			b: func(in *ChainB) (xmlpipe.Response, error) {
				return xmlpipe.Send("c", &ChainC{Text: in.Text}), nil
			},
		},
		{
			name: "b sends to no listener",
			b: func(in *ChainB) (xmlpipe.Response, error) {
				return xmlpipe.Send("nonesuch", &ChainC{Text: in.Text}), nil
			},
		},
		{
			name: "b sends outside the profile",
			b: func(in *ChainB) (xmlpipe.Response, error) {
				return xmlpipe.Send("c", &ChainC{Text: in.Text}), nil
			},
			profiles: []pump.ProfileDef{{Name: "no-c", Listeners: []string{"a", "b"}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := listenerOf(t, "a", func(_ context.Context, in *ChainA, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
				return xmlpipe.Send("b", &ChainB{Text: in.Text}), nil
			})
			b := listenerOf(t, "b", func(_ context.Context, in *ChainB, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
				return tc.b(in)
			})
			c := listenerOf(t, "c", func(context.Context, *ChainC, xmlpipe.Metadata) (xmlpipe.Response, error) {
				return nil, errChainFailed
			})
			ctx := waitCtx(t)
			var p *pump.Pump
			if tc.profiles != nil {
				p = profiled(t, tc.profiles, a, b, c)
				ctx = pump.WithProfile(ctx, tc.profiles[0].Name)
			} else {
				p = startPump(t, pump.Options{}, a, b, c)
			}
			out := newRecorder()
			conv, err := p.Send(ctx, client, "a", &ChainA{Text: "go"}, out)
			if err != nil {
				t.Fatalf("Send: %v", err)
			}
			out.waitFor(t, "completion", kind(pump.EventComplete))
			if diff := cmp.Diff([]string{conv}, liveThreads(p)); diff != "" {
				t.Errorf("live threads once the conversation completed (-want +got):\n%s", diff)
			}
		})
	}
}
