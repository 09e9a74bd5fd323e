package pump_test

import (
	"context"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump"
)

// TestRoutesVersion: every change of the routing table — a listener
// registered, added, removed or replaced — changes RoutesVersion and
// closes the channel RoutesChanged gave before it; a change refused leaves
// both alone.
func TestRoutesVersion(t *testing.T) {
	pr := newProbe()
	p := startPump(t, pump.Options{}, sink[Ping](t, "pings", pr))
	v := p.RoutesVersion()
	step := func(what string, change func() error, moves bool) {
		t.Helper()
		ch := p.RoutesChanged()
		err := change()
		nv := p.RoutesVersion()
		select {
		case <-ch:
			if !moves {
				t.Fatalf("%s: a refused change closed RoutesChanged", what)
			}
		default:
			if moves {
				t.Fatalf("%s: RoutesChanged not closed by the change", what)
			}
		}
		if moves && (err != nil || nv == v) {
			t.Fatalf("%s: err %v, version %d → %d", what, err, v, nv)
		}
		if !moves && nv != v {
			t.Fatalf("%s: a refused change moved the version %d → %d", what, v, nv)
		}
		v = nv
	}
	step("add", func() error { return p.AddListener(sink[Pong](t, "pongs", pr)) }, true)
	step("refused add", func() error { return p.AddListener(sink[Ping](t, "pings2", pr)) }, false)
	step("change", func() error {
		_, err := p.Change(pump.ListenerChange{Remove: []string{"pongs"}, Add: []pump.Listener{sink[Pong](t, "pongs", pr)}})
		return err
	}, true)
	step("remove", func() error { return p.RemoveListener(context.Background(), "pongs") }, true)
}
