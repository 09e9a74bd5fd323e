package pump_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
)

// replyCap is the message size cap of the refused-reply tests.
const replyCap = 4096

// TestOversizedReplyReachesTheExternalSender: a listener without an error
// handler whose answer is over the message size cap cannot be told so; the
// outside sender gets the <huh> instead of waiting for an answer that
// never comes.
func TestOversizedReplyReachesTheExternalSender(t *testing.T) {
	big := func(_ context.Context, in *Pong, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		return xmlpipe.Respond(&Pong{Text: strings.Repeat("x", 2*replyCap)}), nil
	}
	p := startPump(t, pump.Options{MaxBytes: replyCap}, listenerOf(t, "big", big))
	out := newRecorder()
	mustSend(t, p, client, "big", &Pong{Text: "answer"}, out)
	e := out.waitFor(t, "huh", kind(pump.EventHuh))
	got := []string{e.Error, e.From, e.To}
	if diff := cmp.Diff([]string{failure.HuhTooLarge, "core", client}, got); diff != "" {
		t.Errorf("huh error, from, to (-want +got):\n%s", diff)
	}
	out.waitFor(t, "completion", kind(pump.EventComplete))
}

// TestRefusedReplyReachesTheCaller: an answer refused at ingress from a
// listener without an error handler — over the size cap, or a payload its
// caller does not take — reaches the calling listener as a <huh> with the
// reason, instead of leaving it waiting for an answer that never comes.
// (With an error handler the responder hears of it itself:
// TestRespondRejectedReachesResponder.)
func TestRefusedReplyReachesTheCaller(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer any
		huh    string
	}{
		{"over the size cap", &Ping{Text: strings.Repeat("x", 2*replyCap)}, failure.HuhTooLarge},
		{"a payload the caller does not take", &Pong{Text: "asker takes Ping, not Pong"}, failure.HuhPayload},
	} {
		t.Run(tc.name, func(t *testing.T) {
			huhs := make(chan string, 1)
			asker := listenerOf(t, "asker", func(_ context.Context, in *Ping, md xmlpipe.Metadata) (xmlpipe.Response, error) {
				return xmlpipe.Send("maker", &Job{Label: "make"}), nil
			})
			asker = withErrorHandler(asker, func(_ context.Context, de *xmlpipe.DeliveryError, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
				if de.Huh != nil {
					huhs <- de.Huh.Error
				}
				return xmlpipe.Respond(&Ping{Text: "asker heard"}), nil
			})
			maker := listenerOf(t, "maker", func(_ context.Context, _ *Job, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
				return xmlpipe.Respond(tc.answer), nil
			})
			p := startPump(t, pump.Options{MaxBytes: replyCap}, asker, maker)
			out := newRecorder()
			mustSend(t, p, client, "asker", &Ping{Text: "go"}, out)
			reply := out.waitFor(t, "reply", kind(pump.EventReply))
			if r, ok := reply.Payload.(*Ping); !ok || r.Text != "asker heard" {
				t.Errorf("reply %#v, want the asker's answer after the huh", reply.Payload)
			}
			if diff := cmp.Diff(tc.huh, <-huhs); diff != "" {
				t.Errorf("the asker's huh (-want +got):\n%s", diff)
			}
			out.waitFor(t, "completion", kind(pump.EventComplete))
		})
	}
}
