package oob

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/pump"
)

// TestHistoryOfAConversation: every hop of an injected conversation gets
// its own thread, so the history of the thread inject-message answered is
// its first message only; conversation=true reads every hop of the
// conversation that thread (or any of its hops) belongs to, each message
// naming its thread.
func TestHistoryOfAConversation(t *testing.T) {
	f := newFixture(t, nil)
	done := make(chan string, 16)
	cancel := f.org.Pump.Subscribe(pump.OutletFunc(func(e pump.Event) {
		if e.Kind == pump.EventComplete {
			done <- e.Conversation
		}
	}))
	defer cancel()
	r := f.do(t, `<inject-message><to>greeter</to><from>ops</from><payload><Greeting xmlns=""><Name>Ada</Name></Greeting></payload></inject-message>`)
	tc := r.Payload.ThreadCreated
	if tc == nil {
		t.Fatalf("inject: %+v", r.Payload.Error)
	}
	waitFor(t, done, tc.ThreadID)
	if err := f.org.Store().Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	history := func(thread, extra string) *ThreadHistory {
		t.Helper()
		r := f.do(t, `<get-thread-history><thread-id>`+thread+`</thread-id>`+extra+`</get-thread-history>`)
		if r.Payload.ThreadHistory == nil {
			t.Fatalf("history of %s%s: %+v", thread, extra, r.Payload.Error)
		}
		return r.Payload.ThreadHistory
	}
	hop := func(m ThreadMessage) string { return m.From + "→" + m.To }
	hops := func(h *ThreadHistory) []string {
		var out []string
		for _, m := range h.Messages {
			out = append(out, hop(m))
		}
		return out
	}
	// The thread alone: its first hop (unchanged, no thread named).
	if got := history(tc.ThreadID, ""); len(got.Messages) == 0 || hop(got.Messages[0]) != "ops→greeter" ||
		got.Messages[0].Thread != "" {
		t.Fatalf("thread history: %+v", got)
	}
	conv := history(tc.ThreadID, `<conversation>true</conversation>`)
	want := []string{"ops→greeter", "greeter→shouter"}
	if got := hops(conv); len(got) < len(want) || !cmp.Equal(want, got[:len(want)]) {
		t.Fatalf("conversation hops %v, want them to start %v", got, want)
	}
	if conv.Total != len(conv.Messages) || conv.ThreadID != tc.ThreadID || conv.Messages[0].Thread != tc.ThreadID {
		t.Fatalf("conversation history %+v", conv)
	}
	threads := map[string]bool{}
	for _, m := range conv.Messages {
		threads[m.Thread] = true
	}
	if len(threads) < 2 || threads[""] {
		t.Fatalf("conversation's threads %v: want every message to name its thread, several of them", threads)
	}
	// From a later hop's thread, the same conversation.
	later := conv.Messages[len(conv.Messages)-1].Thread
	if d := cmp.Diff(conv.Messages, history(later, `<conversation>true</conversation>`).Messages); d != "" {
		t.Errorf("conversation from hop %s (-from first +from later):\n%s", later, d)
	}
}
