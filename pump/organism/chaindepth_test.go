package organism_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// Volley is what the two players of TestChainDepthFromYAML hit back and forth.
type Volley struct {
	Hits int
}

// Return is the second player's side of the volley.
type Return struct {
	Hits int
}

// TestChainDepthFromYAML: two YAML listeners that forward to each other
// for ever are stopped at organism.yaml's max_chain_depth — the caller is
// told why, naming the players — and the durable organism frees the
// conversation's threads and serves the next one.
func TestChainDepthFromYAML(t *testing.T) {
	cat := catalog.Builtin()
	if err := catalog.Register(cat, "loops.Volley", func(_ context.Context, v *Volley, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		return xmlpipe.Send("right", &Return{Hits: v.Hits + 1}), nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := catalog.Register(cat, "loops.Return", func(_ context.Context, v *Return, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		return xmlpipe.Send("left", &Volley{Hits: v.Hits + 1}), nil
	}); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse("organism.yaml", []byte(`
organism: {name: court}
max_chain_depth: 10
listeners:
  - name: left
    payload_class: loops.Volley
    handler: loops.Volley
    description: hits the ball to the right
  - name: right
    payload_class: loops.Return
    handler: loops.Return
    description: hits the ball to the left
`))
	if err != nil {
		t.Fatal(err)
	}
	o, err := organism.New(cfg, organism.Options{Catalog: cat, DataDir: t.TempDir(),
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	defer o.Shutdown(context.Background())
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	_, err = o.Ask(ctx, "left", &Volley{})
	var ae *pump.AskError
	if !errors.As(err, &ae) {
		t.Fatalf("Ask = %v, want a *pump.AskError", err)
	}
	want := "The conversation exceeded 10 hops (… → right → left → right → left → right → left): " +
		"the message from right to left was not sent. The conversation was stopped."
	if diff := cmp.Diff(want, ae.Event.Error); diff != "" {
		t.Errorf("the caller heard (-want +got):\n%s", diff)
	}
	if o.Pump.Threads().Known(ae.Event.Thread) {
		t.Errorf("the stopped conversation %s keeps its threads (%d live)", ae.Event.Thread, o.Pump.Threads().Len())
	}
	if got := o.Pump.Stats().ChainsStopped; got != 1 {
		t.Errorf("Stats.ChainsStopped = %d, want 1", got)
	}

	// The organism stays up: the next conversation runs, and is stopped too.
	if _, err := o.Ask(ctx, "right", &Return{Hits: 0}); !errors.As(err, &ae) {
		t.Fatalf("second Ask = %v, want the same refusal again", err)
	}
	if got := o.Pump.Stats().ChainsStopped; got != 2 {
		t.Errorf("Stats.ChainsStopped after a second conversation = %d, want 2", got)
	}
}
