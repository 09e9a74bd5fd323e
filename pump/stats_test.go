package pump_test

import (
	"context"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestStatsConversations: Stats counts a conversation while it is in flight
// and no longer once it completed, while the threads it used stay in the
// registry (Stats.Threads) for a continuation until the thread TTL.
func TestStatsConversations(t *testing.T) {
	g := newGate()
	entered := make(chan struct{}, 1)
	relay := listenerOf(t, "relay", func(ctx context.Context, in *Ping, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		entered <- struct{}{}
		if !g.wait(ctx) {
			return nil, ctx.Err()
		}
		return xmlpipe.Send("end", &Pong{Text: in.Text}), nil
	})
	p := startPump(t, pump.Options{}, relay, sink[Pong](t, "end", newProbe()))
	out := newRecorder()
	mustSend(t, p, client, "relay", &Ping{Text: "x"}, out)
	select {
	case <-entered:
	case <-waitCtx(t).Done():
		t.Fatal("the handler did not run")
	}
	if st := p.Stats(); st.Conversations != 1 || st.Threads != 1 {
		t.Errorf("while handling: %d conversations, %d threads; want 1 and 1", st.Conversations, st.Threads)
	}
	g.open()
	out.waitFor(t, "completion", kind(pump.EventComplete))
	if st := p.Stats(); st.Conversations != 0 || st.Threads == 0 {
		t.Errorf("after completion: %d conversations, %d threads; want 0 and the kept threads", st.Conversations, st.Threads)
	}
}
