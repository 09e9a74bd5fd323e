package organism_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// Asking an organism that was shut down — started or never started — is
// told as the organism being shut down (wrapping pump.ErrClosed, and
// saying so) before anything about the
// request itself: not "not started", nor a payload's text field.
func TestAskAfterShutdown(t *testing.T) {
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
		{"AskText to an unknown listener", func(ctx context.Context, o *organism.Organism) error {
			_, err := o.AskText(ctx, "nobody", "hi")
			return err
		}},
		{"Continue", func(ctx context.Context, o *organism.Organism) error {
			_, err := o.Continue(ctx, "0b6c5e2a-4d3f-4a1b-9c8d-7e6f5a4b3c2d", "reverser", &Reverse{Text: "hi"})
			return err
		}},
		{"ContinueText", func(ctx context.Context, o *organism.Organism) error {
			_, err := o.ContinueText(ctx, "0b6c5e2a-4d3f-4a1b-9c8d-7e6f5a4b3c2d", "reverser", "hi")
			return err
		}},
	}
	for _, started := range []bool{false, true} {
		for _, a := range asks {
			name := a.name + ", never started"
			if started {
				name = a.name + ", started"
			}
			t.Run(name, func(t *testing.T) {
				o, err := organism.New(nil, organism.Options{Listeners: []organism.Listener{
					organism.Func("reverser", "Reverses text", reverse),
					organism.Func("relay", "Relays notes", relay),
				}})
				if err != nil {
					t.Fatal(err)
				}
				if started {
					if err := o.Start(); err != nil {
						t.Fatal(err)
					}
				}
				ctx, cancel := context.WithTimeout(t.Context(), embedTimeout)
				defer cancel()
				if err := o.Shutdown(ctx); err != nil {
					t.Fatalf("Shutdown: %v", err)
				}
				err = a.ask(ctx, o)
				if !errors.Is(err, pump.ErrClosed) || !strings.Contains(fmt.Sprint(err), "organism: shut down") {
					t.Errorf("%s = %v, want the organism shut down (wrapping %v)", a.name, err, pump.ErrClosed)
				}
			})
		}
	}
}
