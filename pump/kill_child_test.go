package pump_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestKillRefusesAChildThread: after a kill, a message naming a thread of
// the killed conversation that is not its root — the thread of an inner
// hop, which its sender may have seen in an event — is refused as killed
// (ErrContinueKilled), as one naming the conversation id is, instead of
// beginning a new conversation under that id; nothing of it reaches a
// handler.
func TestKillRefusesAChildThread(t *testing.T) {
	inner := make(chan string, 1)
	pr := newProbe()
	relay := listenerOf(t, "relay", func(_ context.Context, in *Ping, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		return xmlpipe.Send("inner", &Pong{Text: in.Text}), nil
	})
	blocking := listenerOf(t, "inner", func(ctx context.Context, in *Pong, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		if in.Text == "block" {
			inner <- md.ThreadID
			<-ctx.Done()
			return nil, context.Cause(ctx)
		}
		pr.record("inner", in, md)
		return nil, nil
	})
	p := startPump(t, pump.Options{}, relay, blocking)

	conv := mustSend(t, p, client, "relay", &Ping{Text: "block"}, nil)
	child := <-inner
	if child == conv {
		t.Fatalf("the inner hop ran on the conversation's own thread %s", conv)
	}
	if got, err := p.Kill(conv); err != nil || got != conv {
		t.Fatalf("Kill = %q, %v; want %q, nil", got, err, conv)
	}
	for _, tc := range []struct {
		name, thread, to, payload string
	}{
		{"inner hop's thread to inner", child, "inner", `<Pong xmlns=""><Text>again</Text></Pong>`},
		{"inner hop's thread to relay", child, "relay", `<Ping xmlns=""><Text>again</Text></Ping>`},
		{"conversation id", conv, "relay", `<Ping xmlns=""><Text>again</Text></Ping>`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := injectErr(t, p, envelope(client, tc.to, tc.thread, tc.payload), nil)
			if !errors.Is(err, pump.ErrContinueKilled) {
				t.Errorf("continuing on %s: %v; want ErrContinueKilled", tc.thread, err)
			}
		})
	}
	if killed, err := p.WasKilled(conv); !killed || err != nil {
		t.Errorf("WasKilled(conversation) = %v, %v; want true", killed, err)
	}
	fresh := mustSend(t, p, client, "relay", &Ping{Text: "new"}, nil)
	pr.next(t)
	var texts []string
	for _, c := range pr.all() {
		texts = append(texts, c.Payload.(*Pong).Text)
		if c.MD.ThreadID == child || c.MD.ThreadID == conv {
			t.Errorf("the new conversation %s ran on a killed thread %s", fresh, c.MD.ThreadID)
		}
	}
	if diff := cmp.Diff([]string{"new"}, texts); diff != "" {
		t.Errorf("what inner handled (-want +got):\n%s", diff)
	}
}
