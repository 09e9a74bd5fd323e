package pump_test

import (
	"context"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestProfileLateListener: a listener registered after a conversation
// began (a federation import at its first link-up, a registration over
// OOB) is reachable from the conversation's next turn when the profile
// the conversation began with admits it — by name or by glob — and stays
// out of it when only a later, widened definition admits it (seed 000
// §8.5, §12.4: a reload never widens a running thread's profile, but a
// listener the profile named all along is in it).
func TestProfileLateListener(t *testing.T) {
	for _, tc := range []struct {
		name    string
		defs    []string // p's listeners when the conversation begins
		widened []string // p's listeners after the reload (nil: no reload)
		reached bool
	}{
		{name: "named by the original definition", defs: []string{"relay", "target"}, reached: true},
		{name: "matched by the original definition's glob", defs: []string{"relay", "tar*"}, reached: true},
		{name: "named by the original definition, reload in between", defs: []string{"relay", "target"},
			widened: []string{"relay", "target", "other"}, reached: true},
		{name: "admitted only by the widened definition", defs: []string{"relay"},
			widened: []string{"relay", "target"}, reached: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr := newProbe()
			refused := make(chan *xmlpipe.DeliveryError, 8)
			relay := withErrorHandler(agent(listenerOf(t, "relay", func(_ context.Context, in *ChainA, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
				if in.Text == "hop" {
					return xmlpipe.Send("target", &ChainB{Text: in.Text}), nil
				}
				return xmlpipe.Respond(&Pong{Text: "ok"}), nil
			}), "target"), func(_ context.Context, de *xmlpipe.DeliveryError, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
				refused <- de
				return nil, nil
			})
			p := profiled(t, []pump.ProfileDef{{Name: "p", Listeners: tc.defs}}, relay)
			wctx, cancel := context.WithTimeout(t.Context(), reloadWait)
			defer cancel()
			ctx := pump.WithProfile(wctx, "p")
			thread := stage.NewThreadID()
			turn := func(text string) {
				t.Helper()
				out := eventChan(make(chan pump.Event, 16))
				if _, err := p.InjectWait(ctx, envelope(client, "relay", thread, `<ChainA xmlns=""><Text>`+text+`</Text></ChainA>`), out); err != nil {
					t.Fatal(err)
				}
				for e := within(t, out); e.Kind != pump.EventComplete; e = within(t, out) {
				}
			}
			turn("stay")
			if tc.widened != nil {
				if err := p.SetProfiles([]pump.ProfileDef{{Name: "p", Listeners: tc.widened}}); err != nil {
					t.Fatal(err)
				}
			}
			if err := p.AddListener(sink[ChainB](t, "target", pr)); err != nil {
				t.Fatal(err)
			}
			turn("hop")
			if !tc.reached {
				if de := within(t, refused); de == nil {
					t.Fatal("the forward to target was not refused")
				}
				if n := len(pr.all()); n != 0 {
					t.Fatalf("%d deliveries to target, want none", n)
				}
				return
			}
			select {
			case de := <-refused:
				t.Fatalf("the forward to target was refused: %v", de)
			case c := <-pr.ch:
				if c.Listener != "target" {
					t.Fatalf("delivered %+v", c)
				}
			}
		})
	}
}
