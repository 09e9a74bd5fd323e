package pump_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestRefusedMessageKeepsItsConversation: an outside message refused on a
// thread of a known conversation — its root or an inner hop's thread,
// live, or ended by a kill — is journaled with that conversation, not
// with none, so the journal's thread listing shows the thread as the
// conversation's.
func TestRefusedMessageKeepsItsConversation(t *testing.T) {
	jl := &journalLog{}
	inner := make(chan string, 1)
	relay := listenerOf(t, "relay", func(_ context.Context, in *Ping, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		return xmlpipe.Send("inner", &Pong{Text: in.Text}), nil
	})
	blocking := listenerOf(t, "inner", func(ctx context.Context, _ *Pong, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		inner <- md.ThreadID
		<-ctx.Done()
		return nil, context.Cause(ctx)
	})
	p := startPump(t, pump.Options{Journal: jl}, relay, blocking)
	conv := mustSend(t, p, client, "relay", &Ping{Text: "block"}, nil)
	child := <-inner

	// refuse sends a message on thread that is refused, and returns the
	// conversation its refusal was journaled with.
	refuse := func(t *testing.T, thread, to, payload string) string {
		t.Helper()
		if _, err := injectErr(t, p, envelope(client, to, thread, payload), nil); err == nil {
			t.Fatalf("a message to %s on %s was accepted; want it refused", to, thread)
		}
		var got []string
		for _, r := range jl.snapshot() {
			if r.Kind == pump.RecordHuh && r.Direction == pump.Inbound && r.Thread == thread {
				got = append(got, r.Conversation)
			}
		}
		if len(got) == 0 {
			t.Fatalf("no refusal on %s journaled", thread)
		}
		return got[len(got)-1]
	}
	live := []struct {
		name, thread, to, payload string
	}{
		{"no such listener on the root", conv, "nobody", `<Ping xmlns=""><Text>x</Text></Ping>`},
		{"wrong payload on the inner hop", child, "inner", `<Ping xmlns=""><Text>x</Text></Ping>`},
	}
	for _, tc := range live {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(conv, refuse(t, tc.thread, tc.to, tc.payload)); diff != "" {
				t.Errorf("the refusal's conversation (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := p.Kill(conv); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	for _, thread := range []string{conv, child} {
		t.Run("killed, on "+map[bool]string{true: "the root", false: "the inner hop"}[thread == conv], func(t *testing.T) {
			got := refuse(t, thread, "relay", `<Ping xmlns=""><Text>again</Text></Ping>`)
			if diff := cmp.Diff(conv, got); diff != "" {
				t.Errorf("the refusal's conversation (-want +got):\n%s", diff)
			}
		})
	}
}
