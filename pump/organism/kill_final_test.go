package organism

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/listeners/hello"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// TestKillWhileHeldStaysKilledAfterRestart: a greeting waits at greeter —
// the organism halted, or greeter paused — when its conversation is
// killed, and the organism stops (gracefully, which keeps a halt's held
// messages in the journal, or at once, which leaves a paused queue as a
// crash does). The kill takes the greeting out of the queue and marks it
// delivered, and was recorded before Kill returned, so the next start's
// recovery does not deliver the greeting (nothing is shouted, no entry
// stays undelivered), and a continuation of the conversation is refused
// with ErrConversationKilled while a new one is answered.
func TestKillWhileHeldStaysKilledAfterRestart(t *testing.T) {
	for _, tc := range []struct {
		name string
		hold func(*testing.T, *Organism)
		stop func(context.Context, *Organism) error
	}{
		{
			name: "halted, graceful stop",
			hold: func(t *testing.T, o *Organism) {
				if _, err := o.Governance().Halt("operator", pump.HaltAll); err != nil {
					t.Fatal(err)
				}
			},
			stop: func(ctx context.Context, o *Organism) error { return o.Shutdown(ctx) },
		},
		{
			name: "paused, immediate stop",
			hold: func(t *testing.T, o *Organism) {
				if err := o.Pump.Pause("greeter"); err != nil {
					t.Fatal(err)
				}
			},
			stop: func(ctx context.Context, o *Organism) error { return o.ShutdownNow(ctx) },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			dir := t.TempDir()
			o, _ := startDurableHello(t, dir, nil)
			tc.hold(t, o)
			conv, err := o.Pump.Send(ctx, "console", "greeter", &hello.Greeting{Name: "held"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := o.Pump.Kill(conv); err != nil || got != conv {
				t.Fatalf("Kill = %q, %v; want %q, nil", got, err, conv)
			}
			if err := tc.stop(ctx, o); err != nil {
				t.Fatalf("stop: %v", err)
			}

			o, out := startDurableHello(t, dir, nil)
			o.Governance().Resume("operator")
			if err := o.WaitRecovered(ctx); err != nil {
				t.Fatalf("WaitRecovered: %v", err)
			}
			if st := o.Recovery(); st.Skipped > 1 {
				// The greeting was marked delivered at the kill: recovery
				// finds it so, or (its mark not committed before the stop)
				// skips it by the kill record. (The halt held the boot
				// message too: it is re-delivered.)
				t.Errorf("recovery skipped %d message(s), want at most the killed greeting", st.Skipped)
			}
			_, err = o.Pump.SendEnvelope(ctx, pump.Envelope{From: "console", To: "greeter", Thread: conv,
				Payload: []byte(`<Greeting xmlns=""><Name>again</Name></Greeting>`)}, nil)
			if !errors.Is(err, pump.ErrConversationKilled) {
				t.Errorf("continuing the killed conversation after the restart: %v, want ErrConversationKilled", err)
			}
			converse(t, o, "new")
			shutdown(t, o)
			if diff := cmp.Diff([]string{"[shouter] HELLO, NEW!"}, out.all()); diff != "" {
				t.Errorf("printed after the restart (-want +got):\n%s", diff)
			}
			r, err := store.OpenReadOnly(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if killed, err := r.Killed(conv); !killed || err != nil {
				t.Errorf("store Killed(%s) = %v, %v; want true", conv, killed, err)
			}
			if und, err := r.Undelivered(); err != nil || len(und) != 0 {
				t.Errorf("Undelivered after recovery = %d entries, %v", len(und), err)
			}
		})
	}
}

// TestLocalSendOnAKilledConversation: the console's Send continuing a
// conversation killed while its greeting waited at a paused greeter fails
// with an error wrapping ErrConversationKilled (not a bare rejection the
// console could not tell from a bad payload); a Send without a thread
// begins a new conversation.
func TestLocalSendOnAKilledConversation(t *testing.T) {
	o, out := startDurableHello(t, t.TempDir(), nil)
	defer shutdown(t, o)
	l := NewLocal(o)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := o.Pump.Pause("greeter"); err != nil {
		t.Fatal(err)
	}
	conv, err := l.Send(ctx, Message{Target: "greeter", Text: "held"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Pump.Kill(conv); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if err := o.Pump.Resume("greeter"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Send(ctx, Message{Target: "greeter", Text: "again", Thread: conv}); !errors.Is(err, ErrConversationKilled) {
		t.Fatalf("Send on the killed conversation: %v, want ErrConversationKilled", err)
	}
	if _, err := l.Send(ctx, Message{Target: "greeter", Text: "new"}); err != nil {
		t.Fatalf("Send on a new conversation: %v", err)
	}
	select {
	case line := <-out.ch:
		if line != "[shouter] HELLO, NEW!" {
			t.Errorf("printed %q, want the new conversation's shout", line)
		}
	case <-ctx.Done():
		t.Fatal("the new conversation printed nothing")
	}
}
