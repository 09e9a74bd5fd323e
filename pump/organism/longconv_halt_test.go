package organism_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/llmtest"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// TestLongConversationHaltResume: an operator halts the agents while the
// model answers a turn in the middle of a long conversation and resumes
// them: the turn is answered after the resume (the model asked again, as
// it was asked before), and every later turn sends the model the
// conversation as if no halt had happened — the turn once, no trace of
// the aborted call.
func TestLongConversationHaltResume(t *testing.T) {
	const turns, haltAt = 12, 8
	inCall, release := make(chan struct{}), make(chan struct{})
	asked := 0
	m := newLongModel(t, func(msgs []llmtest.Message) []string {
		if lastTurn(msgs) == haltAt && msgs[len(msgs)-1].Role == "user" {
			if asked++; asked == 1 {
				close(inCall)
				<-release // the halt aborts this call meanwhile
			}
		}
		return longReply(msgs)
	})
	t.Cleanup(func() { close(release) }) // before the model server closes
	o := startLongConv(t, m.URL, t.TempDir(), "")
	defer func() { _ = o.Shutdown(context.Background()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	conv := ""
	for k := 1; k <= turns; k++ {
		first := m.Count()
		if k == haltAt {
			type result struct {
				ev  pump.Event
				err error
			}
			done := make(chan result, 1)
			go func() {
				ev, err := o.ContinueText(ctx, conv, "mathbot", turnText(k))
				done <- result{ev, err}
			}()
			<-inCall
			if _, err := o.Pump.Halt(pump.HaltAgents); err != nil {
				t.Fatal(err)
			}
			// The aborted call is released only when the test ends: a
			// reply that raced the halt's abort to the client would be
			// taken as the turn's (a halt holds only a call it stopped), and
			// this test is of the call it stopped.
			o.Pump.Unhalt()
			r := <-done
			if r.err != nil {
				t.Fatalf("turn %d: %v", k, r.err)
			}
			if text, _ := organism.PayloadText(r.ev.Payload); text != "answer 8" {
				t.Fatalf("turn %d answered %q after the resume", k, text)
			}
			if n := m.Count() - first; n != 2 {
				t.Errorf("turn %d: %d model calls, want 2 (the aborted one and its redo)", k, n)
			}
			if d := cmp.Diff(transcript(m.Request(t, first)), transcript(m.Request(t, first+1))); d != "" {
				t.Errorf("the call after the resume differs from the aborted one (-aborted +after):\n%s", d)
			}
			continue
		}
		ev, err := o.ContinueText(ctx, conv, "mathbot", turnText(k))
		if err != nil {
			t.Fatalf("turn %d: %v", k, err)
		}
		conv = ev.Conversation
		if d := cmp.Diff(wantTranscript(k), transcript(m.Request(t, first))); d != "" {
			t.Fatalf("turn %d: what the model is sent (-want +got):\n%s", k, d)
		}
	}
}
