package pump_test

import (
	"context"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestMetadataNamesTheConversation: every hop of one conversation — the
// first listener's thread and the new thread of the hop it sends — and a
// continuation on its thread give their handlers the same
// Metadata.Conversation, another conversation another one. A tool keying
// what it keeps by the conversation (key_value's default namespace) finds
// it again at the next call, though each call travels on a thread of its
// own.
func TestMetadataNamesTheConversation(t *testing.T) {
	type seen struct{ thread, conv string }
	hops := make(chan seen, 16)
	front := agent(listenerOf(t, "front", func(_ context.Context, p *Ping, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		hops <- seen{md.ThreadID, md.Conversation}
		return xmlpipe.Send("back", &Pong{Text: p.Text}), nil
	}), "back")
	back := listenerOf(t, "back", func(_ context.Context, _ *Pong, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		hops <- seen{md.ThreadID, md.Conversation}
		return nil, nil
	})
	p := startPump(t, pump.Options{}, front, back)
	next := func() seen {
		t.Helper()
		select {
		case s := <-hops:
			return s
		case <-waitCtx(t).Done():
			t.Fatal("no hop handled")
		}
		return seen{}
	}

	conv := mustSend(t, p, client, "front", &Ping{Text: "one"}, newRecorder())
	f1, b1 := next(), next()
	if f1.conv == "" || f1.conv != conv || b1.conv != conv {
		t.Fatalf("conversation %s: front saw %q, back saw %q", conv, f1.conv, b1.conv)
	}
	if b1.thread == f1.thread {
		t.Fatalf("the hop to back travelled on front's thread %s: the test shows nothing", f1.thread)
	}

	if _, err := p.AskOn(waitCtx(t), conv, client, "front", &Ping{Text: "two"}); err != nil && err != pump.ErrNoAnswer {
		t.Logf("AskOn: %v", err)
	}
	f2, b2 := next(), next()
	if f2.conv != conv || b2.conv != conv {
		t.Fatalf("continuation of %s: front saw %q, back saw %q", conv, f2.conv, b2.conv)
	}

	other := mustSend(t, p, client, "front", &Ping{Text: "other"}, newRecorder())
	f3, b3 := next(), next()
	if other == conv || f3.conv != other || b3.conv != other {
		t.Fatalf("another conversation %s (first %s): front saw %q, back saw %q", other, conv, f3.conv, b3.conv)
	}
}
