package organism_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// Relay is what the YAML relay takes: a note it hands to its peer.
type Relay struct {
	Text string
}

// RelayedNote is what the Go recorder takes.
type RelayedNote struct {
	Text string
}

func relay(_ context.Context, p *Relay, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
	return xmlpipe.Send("recorder", &RelayedNote{Text: p.Text}), nil
}

func record(_ context.Context, _ *RelayedNote, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
	return nil, nil
}

// relayYAML is an organism.yaml whose listener names, in its peers, peer.
func relayYAML(peer string) string {
	return `organism: {name: relaying}
listeners:
  - name: relay
    payload_class: test.Relay
    handler: test.Relay
    description: Hands notes on
    peers: [` + peer + `]
`
}

// writeRelay writes relayYAML(peer) as organism.yaml in a new directory.
func writeRelay(t *testing.T, peer string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "organism.yaml")
	if err := os.WriteFile(path, []byte(relayYAML(peer)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func relayOptions(t *testing.T) organism.Options {
	t.Helper()
	cat := catalog.Builtin()
	if err := catalog.Register(cat, "test.Relay", relay); err != nil {
		t.Fatal(err)
	}
	return organism.Options{Catalog: cat, Listeners: []organism.Listener{
		organism.Func("recorder", "Records notes", record),
	}}
}

// A listener of organism.yaml may name, in its peers, a listener given in
// Go (Options.Listeners): Load assembles it, the note gets through, and a
// reload of the same file is not refused.
func TestLoadPeersNameGoListener(t *testing.T) {
	path := writeRelay(t, "Recorder")
	o, err := organism.Load(path, relayOptions(t))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), embedTimeout)
		defer cancel()
		if err := o.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	ev, err := ask(t, o, "relay", &Relay{Text: "hello"})
	if err != nil {
		t.Fatalf("Ask: %v", err)
	}
	if diff := cmp.Diff(&RelayedNote{Text: "hello"}, ev.Payload); diff != "" || ev.From != "relay" {
		t.Errorf("answer from %q (-want +got):\n%s", ev.From, diff)
	}
	// A configuration built in code knows no Go listener by itself: the
	// running organism tells its own when it checks one for a reload.
	cur := o.CurrentConfig()
	cfg := config.Default()
	cfg.Organism, cfg.Listeners = cur.Organism, cur.Listeners
	if err := cfg.Validate(); err == nil {
		t.Fatal("Validate accepted a peer it cannot know")
	}
	if _, err := o.Reload(cfg); err != nil {
		t.Errorf("Reload: %v", err)
	}
}

// A peer naming neither a YAML nor a Go listener is still told at its
// file:line, with the nearest name of either kind.
func TestLoadPeerTypoOfGoListener(t *testing.T) {
	path := writeRelay(t, "recroder")
	_, err := organism.Load(path, relayOptions(t))
	want := path + `:7: listeners[0].peers[0]: "recroder" names no listener or gateway (did you mean "recorder"?)`
	if err == nil || err.Error() != want {
		t.Errorf("Load = %v\nwant   %s", err, want)
	}
	var cerr *config.Error
	if !errors.As(err, &cerr) || !strings.HasSuffix(cerr.Pos.File, "organism.yaml") {
		t.Errorf("Load error %v is not a located *config.Error", err)
	}
}
