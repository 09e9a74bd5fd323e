package pump_test

import (
	"context"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestRecoveredConversationKeepsItsTurn: a conversation re-delivered after
// a restart completes with the Event.Turn it had before — the seq of the
// outside message that began the turn, given with an internal message and
// an external message's own seq — so a transport's completion id does not
// change with the crash.
func TestRecoveredConversationKeepsItsTurn(t *testing.T) {
	tests := []struct {
		name     string
		external bool
		seq      int64
		turn     int64
	}{
		{"an internal message of turn 5", false, 9, 5},
		{"the outside message itself", true, 7, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			threads := registry.NewThreads(registry.ThreadsConfig{})
			l := listenerOf(t, "pinger", func(context.Context, *Ping, xmlpipe.Metadata) (xmlpipe.Response, error) {
				return nil, nil
			})
			thread := stage.NewThreadID()
			if !tt.external {
				if err := threads.Begin(thread, client, "pinger"); err != nil {
					t.Fatal(err)
				}
			}
			p := startPump(t, pump.Options{Threads: threads}, l)
			completed := make(chan pump.Event, 1)
			defer p.SubscribeKinds(pump.OutletFunc(func(e pump.Event) {
				select {
				case completed <- e:
				default:
				}
			}), pump.EventComplete)()
			env := stage.AppendEnvelope(nil, client, "pinger", thread, []byte(`<Ping xmlns=""><Text>hello</Text></Ping>`))
			r := pump.Recovered{Seq: tt.seq, Envelope: env, External: tt.external, Conversation: thread, Thread: thread}
			if !tt.external {
				r.Turn = tt.turn
			}
			if err := p.Recover(waitCtx(t), r); err != nil {
				t.Fatal(err)
			}
			select {
			case e := <-completed:
				if e.Turn != tt.turn {
					t.Errorf("completion's turn %d, want %d", e.Turn, tt.turn)
				}
			case <-waitCtx(t).Done():
				t.Fatal("the recovered conversation never completed")
			}
		})
	}
}
