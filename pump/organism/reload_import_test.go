package organism

import (
	"context"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
)

// TestReloadRestoresAnUnregisteredImport: an operator who takes an
// imported listener out (`xmlpipe ctl unregister-listener name=greeter`,
// Organism.RemoveListener) stops it at once; like a listener organism.yaml
// declares, the next reload brings it back — with the contract the peer
// gave — and calls through it are answered again. The gateway used to go
// on counting it as registered, so only a restart restored it.
func TestReloadRestoresAnUnregisteredImport(t *testing.T) {
	a, b := newFedSide(t), newFedSide(t)
	orgB, addr := startFed(t, loadFedConfig(t, "b.yaml", a.pub, ""), b, Options{}, true)
	out := &printed{ch: make(chan string, 4)}
	orgA, _ := startFed(t, loadFedConfig(t, "a.yaml", b.pub, addr), a, Options{Env: catalog.Env{Print: out.print}}, false)
	waitImport(t, orgA, "greeter")
	waitImport(t, orgB, "response-handler")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := orgA.RemoveListener(ctx, "greeter"); err != nil {
		t.Fatalf("unregister the import: %v", err)
	}
	if _, ok := orgA.Pump.Lookup("greeter"); ok {
		t.Fatal("precondition: the unregistered import is gone")
	}
	if _, err := orgA.Reload(loadFedConfig(t, "a.yaml", b.pub, addr)); err != nil {
		t.Fatalf("reload: %v", err)
	}
	if _, ok := orgA.Pump.Lookup("greeter"); !ok {
		t.Fatalf("the reload did not bring the import back; gateways %+v", orgA.Federation.Status())
	}
	greetAcross(t, orgA, orgB, out)
}
