package organism

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/federation"
)

// TestReloadAppliesGateways: an operator federating a running organism
// edits its gateways: and reloads. A gateway added comes up (its imports
// are listeners, its exports callable by the peer); a gateway changed
// (here its remote_url, away and back) relinks to the new address; a
// gateway removed closes its link and its imports go. A gateway whose
// trusted_identity cannot be read is refused with its file:line, and
// nothing changes. Reloads used to refuse any change of gateways: as
// "applies only at the next start".
func TestReloadAppliesGateways(t *testing.T) {
	a, b := newFedSide(t), newFedSide(t)
	orgB, addr := startFed(t, loadFedConfig(t, "b.yaml", a.pub, ""), b, Options{}, true)
	out := &printed{ch: make(chan string, 4)}
	bare := loadFedConfig(t, "a.yaml", b.pub, addr)
	bare.Gateways = nil
	orgA, _ := startFed(t, bare, a, Options{Env: catalog.Env{Print: out.print}}, false)
	if _, ok := orgA.Pump.Lookup("greeter"); ok {
		t.Fatal("precondition: A without gateways has no greeter")
	}
	reload := func(cfg *config.Organism) ReloadReport {
		t.Helper()
		rep, err := orgA.Reload(cfg)
		if err != nil {
			t.Fatalf("reload: %v", err)
		}
		return rep
	}
	state := func() federation.GatewayStatus {
		for _, s := range orgA.Federation.Status() {
			if s.Name == "b" {
				return s
			}
		}
		return federation.GatewayStatus{}
	}

	// Added: the link comes up, the import is a listener, calls cross both ways.
	rep := reload(loadFedConfig(t, "a.yaml", b.pub, addr))
	if d := cmp.Diff([]string{"b"}, rep.GatewaysAdded); d != "" {
		t.Errorf("gateways added (-want +got):\n%s", d)
	}
	waitImport(t, orgA, "greeter")
	waitImport(t, orgB, "response-handler")
	greetAcross(t, orgA, orgB, out)

	// Changed: away to an address nobody serves, the link goes down; back,
	// it comes up again on the peer's.
	rep = reload(loadFedConfig(t, "a.yaml", b.pub, "wss://127.0.0.1:1"))
	if d := cmp.Diff([]string{"b"}, rep.GatewaysChanged); d != "" {
		t.Errorf("gateways changed (-want +got):\n%s", d)
	}
	waitFor(t, "the changed gateway kept its old link", func() bool {
		s := state()
		return s.RemoteURL == "wss://127.0.0.1:1" && s.State != federation.LinkUp
	})
	reload(loadFedConfig(t, "a.yaml", b.pub, addr))
	waitFor(t, "the gateway changed back never linked", func() bool { return state().State == federation.LinkUp })
	waitImport(t, orgA, "greeter")
	greetAcross(t, orgA, orgB, out)

	// Refused: a trusted_identity that does not read names its file:line;
	// the running gateway stays.
	broken := loadFedConfig(t, "a.yaml", filepath.Join(t.TempDir(), "missing.pub"), "wss://127.0.0.1:2")
	_, err := orgA.Reload(broken)
	if !errors.Is(err, ErrReloadRefused) || !strings.Contains(err.Error(), "a.yaml:") ||
		!strings.Contains(err.Error(), "gateways[0].trusted_identity") {
		t.Fatalf("reload with an unreadable trusted_identity: %v, want it refused naming a.yaml:line and the key", err)
	}
	if s := state(); s.RemoteURL != addr {
		t.Errorf("the refused reload changed the gateway: %+v", s)
	}

	// Removed: the link closes, the import goes.
	rep = reload(bare)
	if d := cmp.Diff([]string{"b"}, rep.GatewaysRemoved); d != "" {
		t.Errorf("gateways removed (-want +got):\n%s", d)
	}
	if s := orgA.Federation.Status(); len(s) != 0 {
		t.Errorf("gateways after their removal: %+v", s)
	}
	if _, ok := orgA.Pump.Lookup("greeter"); ok {
		t.Error("the removed gateway's import is still a listener")
	}
	waitFor(t, "B still sees A's link", func() bool { return orgB.Federation.Status()[0].State != federation.LinkUp })
}

// waitFor polls cond until it holds, failing after 60 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal(what)
		}
	}
}

// TestPeerReloadRefreshesImports: organism B reloads with its exported
// greeter described anew; A, linked, is told and its imported greeter
// follows at once — it used to follow only at the next link.
func TestPeerReloadRefreshesImports(t *testing.T) {
	a, b := newFedSide(t), newFedSide(t)
	orgB, addr := startFed(t, loadFedConfig(t, "b.yaml", a.pub, ""), b, Options{}, true)
	orgA, _ := startFed(t, loadFedConfig(t, "a.yaml", b.pub, addr), a, Options{}, false)
	waitImport(t, orgA, "greeter")
	cfg := loadFedConfig(t, "b.yaml", a.pub, "")
	for i := range cfg.Listeners {
		if cfg.Listeners[i].Name == "greeter" {
			cfg.Listeners[i].Description = "Greets anew"
		}
	}
	if _, err := orgB.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "A's import never followed B's reload", func() bool {
		l, ok := orgA.Pump.Lookup("greeter")
		return ok && strings.Contains(l.Description, "Greets anew")
	})
}
