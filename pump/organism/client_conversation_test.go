package organism_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// Wait is what the waiter takes: it waits until its call is cancelled.
type Wait struct{ Text string }

// TestAskOnConversation: a Go caller that asks with OnConversation learns
// the conversation's id while the Ask still waits — early enough to cancel
// or kill it from another goroutine, even when its message waits at a
// halted listener — and it is the id the ended Ask's error names.
func TestAskOnConversation(t *testing.T) {
	tests := []struct {
		name    string
		halted  bool
		stop    func(p *pump.Pump, conv string) (string, error)
		wantErr error
	}{
		{name: "cancel running", stop: (*pump.Pump).Cancel, wantErr: xmlpipe.ErrCancelled},
		{name: "kill running", stop: (*pump.Pump).Kill, wantErr: xmlpipe.ErrConversationKilled},
		{name: "cancel at halted listener", halted: true, stop: (*pump.Pump).Cancel, wantErr: xmlpipe.ErrCancelled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			waiter := organism.Func("waiter", "Waits until cancelled",
				func(ctx context.Context, _ *Wait, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
					<-ctx.Done()
					return nil, context.Cause(ctx)
				})
			o, err := organism.New(nil, organism.Options{Logger: slog.New(slog.DiscardHandler),
				Listeners: []organism.Listener{waiter}})
			if err != nil {
				t.Fatal(err)
			}
			if err := o.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = o.Shutdown(context.Background()) })
			if tc.halted {
				if _, err := o.Governance().HaltListener("test", "waiter"); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			ids := make(chan string, 2)
			done := make(chan error, 1)
			go func() {
				_, err := o.Ask(ctx, "waiter", &Wait{Text: "x"}, organism.OnConversation(func(conv string) { ids <- conv }))
				done <- err
			}()
			var conv string
			select {
			case conv = <-ids:
			case err := <-done:
				t.Fatalf("the Ask returned (%v) without telling its conversation", err)
			case <-ctx.Done():
				t.Fatal("OnConversation was not called")
			}
			got, err := tc.stop(o.Pump, conv)
			if err != nil || got != conv {
				t.Fatalf("stopping %s: got %q, %v; want the same id, nil", conv, got, err)
			}
			select {
			case err := <-done:
				if !errors.Is(err, tc.wantErr) {
					t.Errorf("Ask: %v, want %v", err, tc.wantErr)
				}
			case <-ctx.Done():
				t.Fatal("the Ask did not return after its conversation was stopped")
			}
			if len(ids) != 0 {
				t.Errorf("OnConversation called more than once")
			}
		})
	}
}
