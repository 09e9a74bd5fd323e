package pump_test

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestConversationContinues: a client that names the thread of its own
// ended conversation with an agent continues it on the same thread, and the
// agent finds the conversation's history; another user naming it is
// refused (in memory, by the kept history's origin); a conversation with a
// listener that is no agent keeps no history once it ends.
func TestConversationContinues(t *testing.T) {
	var p *pump.Pump
	chat := agent(listenerOf(t, "chat", func(_ context.Context, in *Bounce, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		n := 0
		if tc, ok := p.Context().Thread(md.ThreadID); ok {
			n = tc.Len()
		}
		return xmlpipe.Respond(&Bounce{Text: in.Text + " after " + strconv.Itoa(n)}), nil
	}))
	echo := listenerOf(t, "echo", func(_ context.Context, in *Job, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		return xmlpipe.Respond(&Job{Label: in.Label}), nil
	})
	p = startPump(t, pump.Options{}, chat, echo)
	alice := pump.Principal{From: "websocket:alice", User: "alice"}
	aliceAPI := pump.Principal{From: "api:alice", User: "alice"}
	bob := pump.Principal{From: "websocket:bob", User: "bob"}

	ask := func(who pump.Principal, thread, text string) (string, error) {
		t.Helper()
		out := newRecorder()
		got, err := p.InjectAs(waitCtx(t), envelope(who.From, "chat", thread, `<Bounce xmlns=""><Text>`+text+`</Text></Bounce>`),
			out, who)
		if err != nil {
			return "", err
		}
		if got != thread {
			t.Fatalf("the message travelled on %s, want %s", got, thread)
		}
		reply := out.waitFor(t, "reply", kind(pump.EventReply))
		out.waitFor(t, "complete", kind(pump.EventComplete))
		if reply.Thread != thread {
			t.Errorf("reply on %s, want %s", reply.Thread, thread)
		}
		return reply.Payload.(*Bounce).Text, nil
	}

	thread := stage.NewThreadID()
	if got, err := ask(alice, thread, "one"); err != nil || got != "one after 1" {
		t.Fatalf("first message: %q, %v", got, err)
	}
	if p.Threads().Known(thread) {
		t.Fatal("the conversation's thread is still live after its answer")
	}
	if st := p.Context().Stats(); st.Kept != 1 {
		t.Fatalf("context stats %+v: want the ended conversation's history kept", st)
	}
	// Another user names it: refused, the history untouched.
	if _, err := ask(bob, thread, "mine?"); !errors.Is(err, pump.ErrForeignThread) {
		t.Fatalf("bob continuing alice's conversation: %v, want ErrForeignThread", err)
	}
	if err := p.CheckThread(bob, thread); !errors.Is(err, pump.ErrForeignThread) {
		t.Errorf("CheckThread(bob) = %v", err)
	}
	if err := p.CheckThread(aliceAPI, thread); err != nil {
		t.Errorf("CheckThread(alice over the API) = %v", err)
	}
	// Alice continues it, over another of her session identities.
	if got, err := ask(aliceAPI, thread, "two"); err != nil || got != "two after 2" {
		t.Fatalf("continuation: %q, %v (want the history of the first exchange)", got, err)
	}
	if got, err := ask(alice, thread, "three"); err != nil || got != "three after 3" {
		t.Fatalf("second continuation: %q, %v", got, err)
	}

	// A conversation with a listener that is no agent frees its history.
	other := stage.NewThreadID()
	out := newRecorder()
	if _, err := p.InjectAs(waitCtx(t), envelope(alice.From, "echo", other, `<Job xmlns=""><Label>x</Label></Job>`), out,
		alice); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, "complete", kind(pump.EventComplete))
	if _, ok := p.Context().Thread(other); ok {
		t.Error("the history of an ended conversation with a plain listener was kept")
	}
	if st := p.Context().Stats(); st.Kept != 1 || st.ThreadCount != 1 {
		t.Errorf("context stats %+v: want only alice's conversation with chat kept", st)
	}
}
