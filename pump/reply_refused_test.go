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

// TestOversizedReplyReachesTheCaller: a listener without an error handler
// whose answer is over the message size cap cannot be told so; its caller —
// the outside sender, or a listener waiting for the answer — gets the
// <huh> instead of waiting for an answer that never comes.
func TestOversizedReplyReachesTheCaller(t *testing.T) {
	const capBytes = 4096
	big := func(_ context.Context, in *Pong, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		return xmlpipe.Respond(&Pong{Text: strings.Repeat("x", 2*capBytes)}), nil
	}
	t.Run("to the external sender", func(t *testing.T) {
		p := startPump(t, pump.Options{MaxBytes: capBytes}, listenerOf(t, "big", big))
		out := newRecorder()
		mustSend(t, p, client, "big", &Pong{Text: "answer"}, out)
		e := out.waitFor(t, "huh", kind(pump.EventHuh))
		got := []string{e.Error, e.From, e.To}
		if diff := cmp.Diff([]string{failure.HuhTooLarge, "core", client}, got); diff != "" {
			t.Errorf("huh error, from, to (-want +got):\n%s", diff)
		}
		out.waitFor(t, "completion", kind(pump.EventComplete))
	})
	t.Run("to the calling listener", func(t *testing.T) {
		huhs := make(chan string, 1)
		caller := listenerOf(t, "caller", func(_ context.Context, in *Ping, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
			return xmlpipe.Send("big", &Pong{Text: in.Text}), nil
		})
		caller = withErrorHandler(caller, func(_ context.Context, de *xmlpipe.DeliveryError, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
			if de.Huh != nil {
				huhs <- de.Huh.Error
			}
			return xmlpipe.Respond(&Ping{Text: "caller heard"}), nil
		})
		p := startPump(t, pump.Options{MaxBytes: capBytes}, caller, listenerOf(t, "big", big))
		out := newRecorder()
		mustSend(t, p, client, "caller", &Ping{Text: "answer"}, out)
		reply := out.waitFor(t, "reply", kind(pump.EventReply))
		if r, ok := reply.Payload.(*Ping); !ok || r.Text != "caller heard" {
			t.Errorf("reply %#v, want the caller's answer after the huh", reply.Payload)
		}
		if diff := cmp.Diff(failure.HuhTooLarge, <-huhs); diff != "" {
			t.Errorf("the caller's huh (-want +got):\n%s", diff)
		}
		out.waitFor(t, "completion", kind(pump.EventComplete))
	})
}

// TestRefusedReplyReachesTheCaller: a reply its caller does not take (the
// wrong payload type) from a listener without an error handler: the caller
// gets the <huh>, with the reason, instead of waiting for an answer that
// never comes. (With an error handler the responder hears of it itself:
// TestRespondRejectedReachesResponder.)
func TestRefusedReplyReachesTheCaller(t *testing.T) {
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
		return xmlpipe.Respond(&Pong{Text: "asker takes Ping, not Pong"}), nil
	})
	p := startPump(t, pump.Options{}, asker, maker)
	out := newRecorder()
	mustSend(t, p, client, "asker", &Ping{Text: "go"}, out)
	reply := out.waitFor(t, "reply", kind(pump.EventReply))
	if r, ok := reply.Payload.(*Ping); !ok || r.Text != "asker heard" {
		t.Errorf("reply %#v, want the asker's answer after the huh", reply.Payload)
	}
	if diff := cmp.Diff(failure.HuhPayload, <-huhs); diff != "" {
		t.Errorf("the asker's huh (-want +got):\n%s", diff)
	}
	out.waitFor(t, "completion", kind(pump.EventComplete))
}
