package pump_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// twoHopWait bounds the waits of the two-hop tests: generous, for a
// loaded machine; a passing test never waits for it.
const twoHopWait = 90 * time.Second

// waitLong is recorder.waitFor bounded by twoHopWait.
func waitLong(t *testing.T, r *recorder, what string, match func(pump.Event) bool) pump.Event {
	t.Helper()
	deadline := time.NewTimer(twoHopWait)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		ch := r.notify
		for _, e := range r.events {
			if match(e) {
				r.mu.Unlock()
				return e
			}
		}
		r.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s; events: %s", what, describe(r.snapshot()))
		}
	}
}

// toClient matches the events told to the outside client.
func toClient(k pump.EventKind) func(pump.Event) bool {
	return func(e pump.Event) bool { return e.Kind == k && e.To == client }
}

// TestTwoHopFailureReachesTheClient: an outside client calls relay, a
// plain listener (no error handler) that calls worker; worker fails — its
// answer has no route, its handler errs, it times out. relay cannot hear
// the <huh> about its call, so the failure travels on up the thread path
// to relay's caller, the client, saying what failed where, rather than the
// conversation ending without an answer.
func TestTwoHopFailureReachesTheClient(t *testing.T) {
	for _, tc := range []struct {
		name    string
		worker  func(context.Context, *Job, xmlpipe.Metadata) (xmlpipe.Response, error)
		timeout time.Duration
		want    string
		cause   error
	}{
		{"worker's answer has no route",
			func(context.Context, *Job, xmlpipe.Metadata) (xmlpipe.Response, error) {
				return xmlpipe.Raw([]byte("<CalcResult><Value>42</Value></CalcResult>")), nil
			}, 0,
			"relay's call to worker failed: Answer <CalcResult> from worker has no route", failure.ErrNoRoute},
		{"worker's handler fails",
			func(context.Context, *Job, xmlpipe.Metadata) (xmlpipe.Response, error) {
				return nil, errors.New("disk on fire")
			}, 0,
			"relay's call to worker failed: " + failure.HuhProcessing, failure.ErrHandler},
		{"worker times out",
			func(ctx context.Context, _ *Job, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
				<-ctx.Done()
				return nil, context.Cause(ctx)
			}, 50 * time.Millisecond,
			"relay's call to worker failed: " + failure.HuhProcessing, pump.ErrHandlerTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			relay := listenerOf(t, "relay", func(_ context.Context, in *Ping, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
				return xmlpipe.Send("worker", &Job{Label: in.Text}), nil
			})
			worker := listenerOf(t, "worker", tc.worker)
			worker.Timeout = tc.timeout
			p := startPump(t, pump.Options{}, relay, worker)
			all := newRecorder()
			defer p.Subscribe(all)()
			out := newRecorder()
			mustSend(t, p, client, "relay", &Ping{Text: "2+40"}, out)
			waitLong(t, out, "completion", kind(pump.EventComplete))
			waitLong(t, all, "completion", kind(pump.EventComplete))
			if n := out.count(toClient(pump.EventHuh)); n != 1 {
				t.Fatalf("the client was told %d <huh>s, want 1; events: %s", n, describe(out.snapshot()))
			}
			// One failure, one event: the <huh> relay could not hear is
			// journaled, not told beside the client's.
			if n := all.count(kind(pump.EventHuh)); n != 1 {
				t.Errorf("subscribers saw %d <huh> events, want 1; events: %s", n, describe(all.snapshot()))
			}
			e := waitLong(t, out, "the client's huh", toClient(pump.EventHuh))
			if diff := cmp.Diff([]string{"core", client, tc.want}, []string{e.From, e.To, e.Error}); diff != "" {
				t.Errorf("the client's huh: from, to, error (-want +got):\n%s", diff)
			}
			if !errors.Is(e.Cause, tc.cause) {
				t.Errorf("huh cause %v does not wrap %v", e.Cause, tc.cause)
			}
		})
	}
}

// TestTwoHopFailureAsk: an Ask of such a conversation fails with an
// *AskError told to the asker itself, whose cause is the worker's.
func TestTwoHopFailureAsk(t *testing.T) {
	relay := listenerOf(t, "relay", func(_ context.Context, in *Ping, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		return xmlpipe.Send("worker", &Job{Label: in.Text}), nil
	})
	worker := listenerOf(t, "worker", func(context.Context, *Job, xmlpipe.Metadata) (xmlpipe.Response, error) {
		return xmlpipe.Raw([]byte("<CalcResult><Value>42</Value></CalcResult>")), nil
	})
	p := startPump(t, pump.Options{}, relay, worker)
	ctx, cancel := context.WithTimeout(t.Context(), twoHopWait)
	defer cancel()
	_, err := p.Ask(ctx, client, "relay", &Ping{Text: "go"})
	ae, ok := errors.AsType[*pump.AskError](err)
	if !ok || !errors.Is(err, failure.ErrNoRoute) {
		t.Fatalf("Ask: %v, want an *AskError finding failure.ErrNoRoute", err)
	}
	got := []string{ae.Event.To, ae.Event.Error}
	want := []string{client, "relay's call to worker failed: Answer <CalcResult> from worker has no route"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the Ask's failure: to, error (-want +got):\n%s", diff)
	}
}

// TestThreeHopFailureClimbsToTheNearestHandler: the failure climbs past
// every plain listener on the path to the nearest party that can hear it:
// a listener with an error handler hears it (and its caller is told
// nothing of it), else the outside client — told once, naming each call.
func TestThreeHopFailureClimbsToTheNearestHandler(t *testing.T) {
	build := func(topHears chan string) (*pump.Pump, *recorder) {
		top := listenerOf(t, "top", func(_ context.Context, in *Ping, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
			return xmlpipe.Send("relay", &Pong{Text: in.Text}), nil
		})
		if topHears != nil {
			top = withErrorHandler(top, func(_ context.Context, de *xmlpipe.DeliveryError, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
				if de.Huh != nil {
					topHears <- de.Huh.Error
				}
				return xmlpipe.Respond(&Ping{Text: "top recovered"}), nil
			})
		}
		relay := listenerOf(t, "relay", func(_ context.Context, in *Pong, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
			return xmlpipe.Send("worker", &Job{Label: in.Text}), nil
		})
		worker := listenerOf(t, "worker", func(context.Context, *Job, xmlpipe.Metadata) (xmlpipe.Response, error) {
			return nil, errors.New("boom")
		})
		p := startPump(t, pump.Options{}, top, relay, worker)
		out := newRecorder()
		mustSend(t, p, client, "top", &Ping{Text: "go"}, out)
		waitLong(t, out, "completion", kind(pump.EventComplete))
		return p, out
	}
	t.Run("to the client", func(t *testing.T) {
		_, out := build(nil)
		if n := out.count(toClient(pump.EventHuh)); n != 1 {
			t.Fatalf("the client was told %d <huh>s, want 1; events: %s", n, describe(out.snapshot()))
		}
		e := waitLong(t, out, "huh", toClient(pump.EventHuh))
		want := "top's call to relay failed: relay's call to worker failed: " + failure.HuhProcessing
		if diff := cmp.Diff(want, e.Error); diff != "" {
			t.Errorf("the client's huh (-want +got):\n%s", diff)
		}
	})
	t.Run("to a listener with an error handler", func(t *testing.T) {
		heard := make(chan string, 1)
		_, out := build(heard)
		reply := waitLong(t, out, "reply", toClient(pump.EventReply))
		if r, ok := reply.Payload.(*Ping); !ok || r.Text != "top recovered" {
			t.Errorf("reply %#v, want top's answer after hearing the failure", reply.Payload)
		}
		if diff := cmp.Diff("relay's call to worker failed: "+failure.HuhProcessing, <-heard); diff != "" {
			t.Errorf("what top heard (-want +got):\n%s", diff)
		}
		if n := out.count(toClient(pump.EventHuh)); n != 0 {
			t.Errorf("the client was told %d <huh>s besides top's answer; events: %s", n, describe(out.snapshot()))
		}
	})
}

// TestTwoHopFailureUnderAProfile: a profiled client is told the failure
// two hops deep naming only listeners of its profile, and a listener
// outside it stays unnamed: worker's answer for a listener the profile
// masks reads as one nobody registered.
func TestTwoHopFailureUnderAProfile(t *testing.T) {
	relay := listenerOf(t, "relay", func(_ context.Context, in *Ping, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		return xmlpipe.Send("worker", &Job{Label: in.Text}), nil
	})
	worker := listenerOf(t, "worker", func(context.Context, *Job, xmlpipe.Metadata) (xmlpipe.Response, error) {
		return xmlpipe.Raw([]byte(`<Pong><Text>42</Text></Pong>`)), nil
	})
	pr := newProbe()
	defs := []pump.ProfileDef{{Name: "front", Listeners: []string{"relay", "worker"}}}
	p := profiled(t, defs, relay, worker, sink[Pong](t, "secret-printer", pr))
	out := newRecorder()
	raw := envelope(client, "relay", stage.NewThreadID(), `<Ping xmlns=""><Text>2+40</Text></Ping>`)
	if _, err := p.InjectWait(pump.WithProfile(waitCtx(t), "front"), raw, out); err != nil {
		t.Fatal(err)
	}
	waitLong(t, out, "completion", kind(pump.EventComplete))
	e := waitLong(t, out, "huh", toClient(pump.EventHuh))
	if diff := cmp.Diff("relay's call to worker failed: Answer <Pong> from worker has no route", e.Error); diff != "" {
		t.Errorf("the client's huh (-want +got):\n%s", diff)
	}
	for _, e := range out.snapshot() {
		for _, s := range append([]string{e.Error, e.Listener, e.To, e.From}, e.Diagnostics...) {
			if strings.Contains(s, "secret-printer") {
				t.Errorf("an event told the profiled client of secret-printer: %+v", e)
			}
		}
	}
	if n := len(pr.all()); n != 0 {
		t.Errorf("the listener outside the profile handled %d messages", n)
	}
}

// TestFailureOnAnAnswerReachesTheClient: relay, a plain listener, fails
// handling the answer of worker, a plain listener too, whose part is over
// (it answered): the failure is relay's own, told to relay's caller — the
// client — as relay failing, not to worker, which could not hear it.
func TestFailureOnAnAnswerReachesTheClient(t *testing.T) {
	relay := listenerOf(t, "relay", func(_ context.Context, in *Ping, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		if md.From == "worker" {
			return nil, errors.New("cannot read the answer")
		}
		return xmlpipe.Send("worker", &Job{Label: in.Text}), nil
	})
	worker := listenerOf(t, "worker", func(_ context.Context, in *Job, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		return xmlpipe.Respond(&Ping{Text: in.Label}), nil
	})
	p := startPump(t, pump.Options{}, relay, worker)
	out := newRecorder()
	mustSend(t, p, client, "relay", &Ping{Text: "go"}, out)
	waitLong(t, out, "completion", kind(pump.EventComplete))
	if n := out.count(toClient(pump.EventHuh)); n != 1 {
		t.Fatalf("the client was told %d <huh>s, want 1; events: %s", n, describe(out.snapshot()))
	}
	e := waitLong(t, out, "huh", toClient(pump.EventHuh))
	got := []string{e.Error, e.Listener}
	if diff := cmp.Diff([]string{failure.HuhProcessing, "relay"}, got); diff != "" {
		t.Errorf("the client's huh: error, listener (-want +got):\n%s", diff)
	}
	if !errors.Is(e.Cause, failure.ErrHandler) {
		t.Errorf("huh cause %v does not wrap failure.ErrHandler", e.Cause)
	}
}

// TestTwoHopInputErrorStaysWithTheDetails: an *xmlpipe.InputError the
// worker wrote for its caller, relay, is about a message the client did
// not write: the relayed failure's cause finds the worker's failure, but
// not that InputError (which transports tell the client as its own), and
// errors.As finds the *pump.RelayedError saying whose call failed.
func TestTwoHopInputErrorStaysWithTheDetails(t *testing.T) {
	errEmpty := errors.New("the label is empty")
	relay := listenerOf(t, "relay", func(_ context.Context, in *Ping, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		return xmlpipe.Send("worker", &Job{Label: in.Text}), nil
	})
	worker := listenerOf(t, "worker", func(context.Context, *Job, xmlpipe.Metadata) (xmlpipe.Response, error) {
		return nil, &xmlpipe.InputError{Err: errEmpty}
	})
	p := startPump(t, pump.Options{}, relay, worker)
	out := newRecorder()
	mustSend(t, p, client, "relay", &Ping{Text: "go"}, out)
	e := waitLong(t, out, "huh", toClient(pump.EventHuh))
	if _, ok := errors.AsType[*xmlpipe.InputError](e.Cause); ok {
		t.Errorf("the client's huh cause %v hands it the worker's InputError", e.Cause)
	}
	if !errors.Is(e.Cause, errEmpty) || !errors.Is(e.Cause, failure.ErrHandler) {
		t.Errorf("the client's huh cause %v does not find the worker's failure", e.Cause)
	}
	re, ok := errors.AsType[*pump.RelayedError](e.Cause)
	if !ok {
		t.Fatalf("the client's huh cause %v is no *pump.RelayedError", e.Cause)
	}
	if diff := cmp.Diff([]string{"relay", "worker"}, []string{re.Listener, re.At}); diff != "" {
		t.Errorf("RelayedError listener, at (-want +got):\n%s", diff)
	}
}

// TestOwnRefusedOutputReachesTheClient: a plain listener's own output
// refused — more messages in one reply than it may send — is told to it
// as a SystemError it cannot hear: its caller, the client, gets that
// SystemError, saying whose message failed.
func TestOwnRefusedOutputReachesTheClient(t *testing.T) {
	relay := listenerOf(t, "relay", func(context.Context, *Ping, xmlpipe.Metadata) (xmlpipe.Response, error) {
		return xmlpipe.Raw([]byte("<Pong><Text>a</Text></Pong><Pong><Text>b</Text></Pong>")), nil
	})
	relay.MaxMessagesPerTurn = 1
	p := startPump(t, pump.Options{}, relay, sink[Pong](t, "printer", newProbe()))
	out := newRecorder()
	mustSend(t, p, client, "relay", &Ping{Text: "go"}, out)
	waitLong(t, out, "completion", kind(pump.EventComplete))
	e := waitLong(t, out, "system error", toClient(pump.EventSystemError))
	se, ok := e.Payload.(*xmlpipe.SystemError)
	if !ok {
		t.Fatalf("payload %#v, want a SystemError", e.Payload)
	}
	want := "relay's message failed: " + stage.TooManyMessagesError(2, 1).Message
	if diff := cmp.Diff(want, se.Message); diff != "" {
		t.Errorf("the client's SystemError (-want +got):\n%s", diff)
	}
}
