package organism_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// Asking an organism built but never started — the embedder forgot Start —
// says what to do, not only "pump: not started", and still matches
// pump.ErrNotStarted.
func TestAskBeforeStart(t *testing.T) {
	asks := []struct {
		name string
		ask  func(context.Context, *organism.Organism) error
	}{
		{"Ask", func(ctx context.Context, o *organism.Organism) error {
			_, err := o.Ask(ctx, "reverser", &Reverse{Text: "hi"})
			return err
		}},
		{"AskText", func(ctx context.Context, o *organism.Organism) error {
			_, err := o.AskText(ctx, "relay", "hi")
			return err
		}},
		{"Continue", func(ctx context.Context, o *organism.Organism) error {
			_, err := o.Continue(ctx, "0b6c5e2a-4d3f-4a1b-9c8d-7e6f5a4b3c2d", "reverser", &Reverse{Text: "hi"})
			return err
		}},
	}
	for _, a := range asks {
		t.Run(a.name, func(t *testing.T) {
			o, err := organism.New(nil, organism.Options{Logger: slog.New(slog.DiscardHandler), Listeners: []organism.Listener{
				organism.Func("reverser", "Reverses text", reverse),
				organism.Func("relay", "Relays notes", relay),
			}})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			err = a.ask(ctx, o)
			if !errors.Is(err, pump.ErrNotStarted) || !strings.Contains(fmt.Sprint(err), "call Start") {
				t.Errorf("%s = %v, want an error saying to call Start (wrapping %v)", a.name, err, pump.ErrNotStarted)
			}
		})
	}
}
