package organism

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// TestLiveListenerChangeTellsPeers: a listener an operator unregisters
// (`xmlpipe ctl unregister-listener`, Organism.RemoveListener) or
// registers (register-listener, Organism.AddListener) on a running
// organism changes what it exports, and its linked peers hear of it at
// once, as after a reload (exports-changed): A's imported greeter goes
// when B's greeter goes, and comes back — answering again — when B's
// comes back. A used to keep the stale import until its next reload.
func TestLiveListenerChangeTellsPeers(t *testing.T) {
	a, b := newFedSide(t), newFedSide(t)
	orgB, addr := startFed(t, loadFedConfig(t, "b.yaml", a.pub, ""), b, Options{}, true)
	out := &printed{ch: make(chan string, 4)}
	orgA, _ := startFed(t, loadFedConfig(t, "a.yaml", b.pub, addr), a, Options{Env: catalog.Env{Print: out.print}}, false)
	waitImport(t, orgA, "greeter")
	waitImport(t, orgB, "response-handler")

	var greeter config.Listener
	for _, lc := range orgB.CurrentConfig().Listeners {
		if strings.EqualFold(lc.Name, "greeter") {
			greeter = lc
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := orgB.RemoveListener(ctx, "greeter"); err != nil {
		t.Fatalf("unregister B's greeter: %v", err)
	}
	awaitLookup(t, orgA, "greeter", false)
	if err := orgB.AddListener(greeter); err != nil {
		t.Fatalf("register B's greeter again: %v", err)
	}
	awaitLookup(t, orgA, "greeter", true)
	greetAcross(t, orgA, orgB, out)
}

// awaitLookup waits until o has the listener name (want) or has not.
func awaitLookup(t *testing.T, o *Organism, name string, want bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for range tick.C {
		if _, ok := o.Pump.Lookup(name); ok == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: listener %s present %v after 60s, want %v; gateways %+v", o.Config.Organism.Name, name,
				!want, want, o.Federation.Status())
		}
	}
}
