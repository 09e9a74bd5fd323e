package pump_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestAgentSelfIteration: an agent without peers may self-iterate — Send to
// its own name, and Raw text carrying its own root tag without <to> (blind
// self-iteration) — and respond; each respond prunes back one level.
func TestAgentSelfIteration(t *testing.T) {
	type step struct {
		N          int
		From       string
		Thread     string // symbolic: T0 conversation, T1, T2 deeper
		IsSelfCall bool
		OwnName    string
	}
	var mu sync.Mutex
	var steps []step
	labels := map[string]string{}
	label := func(id string) string {
		if l, ok := labels[id]; ok {
			return l
		}
		labels[id] = "T" + string(rune('0'+len(labels)))
		return labels[id]
	}
	solo := agent(listenerOf(t, "solo", func(_ context.Context, in *SoloStep, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		mu.Lock()
		steps = append(steps, step{in.N, md.From, label(md.ThreadID), md.IsSelfCall, md.OwnName})
		mu.Unlock()
		switch {
		case md.From == client:
			return xmlpipe.Send("solo", &SoloStep{N: 1}), nil
		case in.N == 1:
			return xmlpipe.Raw([]byte("thinking… <SoloStep><N>2</N></SoloStep> done")), nil
		default:
			return xmlpipe.Respond(&SoloStep{N: in.N + 1}), nil
		}
	}))
	p := startPump(t, pump.Options{}, solo)
	out := newRecorder()
	mustSend(t, p, client, "solo", &SoloStep{N: 0}, out)
	reply := out.waitFor(t, "reply", kind(pump.EventReply))
	want := []step{
		{0, client, "T0", false, "solo"},
		{1, "solo", "T1", true, "solo"}, // Send to own name
		{2, "solo", "T2", true, "solo"}, // blind self-iteration by root tag
		{3, "solo", "T1", true, "solo"}, // respond from T2 prunes to T1
		{4, "solo", "T0", true, "solo"}, // respond from T1 prunes to T0
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(want, steps); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if r, ok := reply.Payload.(*SoloStep); !ok || r.N != 5 || reply.To != client {
		t.Errorf("reply %#v to %s, want N=5 to %s", reply.Payload, reply.To, client)
	}
}

// TestPeerEnforcement: an agent reaches only itself and its peers; anything
// else becomes a SystemError delivered through its ErrorHandler on its own
// thread, which stays alive (reference Q7 and Q35 fixed: agents without peers
// are checked too, raw output is checked, names compare like routing).
func TestPeerEnforcement(t *testing.T) {
	tests := []struct {
		name      string
		peers     []string
		respond   func() xmlpipe.Response
		violation bool
		reached   string // listener that must receive the output when allowed
	}{
		{"no peers: forward refused", nil, func() xmlpipe.Response { return xmlpipe.Send("other", &Pong{Text: "x"}) }, true, ""},
		{"no peers: raw with another's tag refused", nil, func() xmlpipe.Response {
			return xmlpipe.Raw([]byte(`<Pong><Text>x</Text></Pong>`))
		}, true, ""},
		{"peer allowed", []string{"other"}, func() xmlpipe.Response { return xmlpipe.Send("other", &Pong{Text: "x"}) }, false, "other"},
		{"peer allowed in another case", []string{"Other"}, func() xmlpipe.Response { return xmlpipe.Send("OTHER", &Pong{Text: "x"}) }, false, "other"},
		{"raw to a peer by root tag", []string{"other"}, func() xmlpipe.Response {
			return xmlpipe.Raw([]byte(`<Pong><Text>x</Text></Pong>`))
		}, false, "other"},
		{"not a peer", []string{"other"}, func() xmlpipe.Response { return xmlpipe.Send("third", &Job{Label: "x"}) }, true, ""},
		{"not a peer, unknown name", []string{"other"}, func() xmlpipe.Response { return xmlpipe.Send("ghost", &Job{Label: "x"}) }, true, ""},
		{"respond to a caller that is not a peer", []string{"other"}, func() xmlpipe.Response {
			return xmlpipe.Respond(&Pong{Text: "back"})
		}, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var p *pump.Pump
			pr := newProbe()
			type errSeen struct {
				err    *xmlpipe.DeliveryError
				md     xmlpipe.Metadata
				alive  bool
				thread string
			}
			errs := make(chan errSeen, 4)
			var agentThread string
			bot := agent(listenerOf(t, "bot", func(_ context.Context, in *Ping, md xmlpipe.Metadata) (xmlpipe.Response, error) {
				agentThread = md.ThreadID
				if md.OwnName != "bot" || (len(tc.peers) > 0) != (md.UsageInstructions != "") {
					t.Errorf("agent metadata OwnName=%q usage=%d bytes", md.OwnName, len(md.UsageInstructions))
				}
				return tc.respond(), nil
			}), tc.peers...)
			bot = withErrorHandler(bot, func(_ context.Context, de *xmlpipe.DeliveryError, md xmlpipe.Metadata) (xmlpipe.Response, error) {
				errs <- errSeen{de, md, p.Threads().Known(md.ThreadID), md.ThreadID}
				return xmlpipe.Respond(&Pong{Text: "recovered"}), nil
			})
			p = startPump(t, pump.Options{}, bot, sink[Pong](t, "other", pr), sink[Job](t, "third", pr))
			events := newRecorder()
			p.Subscribe(events)
			out := newRecorder()
			conv := mustSend(t, p, client, "bot", &Ping{Text: "go"}, out)
			out.waitFor(t, "completion", kind(pump.EventComplete))
			if !tc.violation {
				if len(errs) != 0 {
					t.Fatalf("unexpected error delivered: %+v", (<-errs).err)
				}
				calls := pr.all()
				switch {
				case tc.reached == "" && len(calls) != 0:
					t.Errorf("calls %v, want none", calls)
				case tc.reached != "" && (len(calls) != 1 || calls[0].Listener != tc.reached || calls[0].MD.From != "bot"):
					t.Errorf("calls %+v, want one to %s from bot", calls, tc.reached)
				}
				if tc.reached == "" {
					reply := out.waitFor(t, "reply", kind(pump.EventReply))
					if reply.To != client {
						t.Errorf("reply to %s, want %s", reply.To, client)
					}
				}
				return
			}
			var got errSeen
			select {
			case got = <-errs:
			default:
				t.Fatal("the agent's ErrorHandler was not called")
			}
			want := &xmlpipe.DeliveryError{System: stage.RoutingError(), Detail: got.err.Detail}
			if diff := cmp.Diff(want, got.err); diff != "" {
				t.Errorf("delivered error (-want +got):\n%s", diff)
			}
			if !strings.Contains(got.err.Detail, "is not among the peers of bot") {
				t.Errorf("detail %q does not name the refused peer", got.err.Detail)
			}
			if got.md.From != "system" || got.thread != agentThread || got.thread != conv || !got.alive {
				t.Errorf("SystemError from %q on %s (alive %v), want from system on the agent's own thread %s, alive",
					got.md.From, got.thread, got.alive, agentThread)
			}
			if calls := pr.all(); len(calls) != 0 {
				t.Errorf("violating output delivered: %+v", calls)
			}
			reply := out.waitFor(t, "reply from the error handler", kind(pump.EventReply))
			if r, ok := reply.Payload.(*Pong); !ok || r.Text != "recovered" {
				t.Errorf("reply %#v", reply.Payload)
			}
			se := events.waitFor(t, "system-error event", kind(pump.EventSystemError))
			if se.To != "bot" || se.Thread != agentThread {
				t.Errorf("system-error event to %s on %s", se.To, se.Thread)
			}
		})
	}
}

// TestPeerViolationWithoutErrorHandler: an agent that cannot receive errors
// has its violation dead-lettered (logged and observable), never delivered.
func TestPeerViolationWithoutErrorHandler(t *testing.T) {
	pr := newProbe()
	bot := agent(listenerOf(t, "bot", func(context.Context, *Ping, xmlpipe.Metadata) (xmlpipe.Response, error) {
		return xmlpipe.Send("other", &Pong{Text: "x"}), nil
	}))
	p := startPump(t, pump.Options{}, bot, sink[Pong](t, "other", pr))
	events := newRecorder()
	p.Subscribe(events)
	out := newRecorder()
	mustSend(t, p, client, "bot", &Ping{}, out)
	out.waitFor(t, "completion", kind(pump.EventComplete))
	dl := events.waitFor(t, "dead letter", kind(pump.EventDeadLetter))
	if !strings.Contains(dl.Error, "peer") {
		t.Errorf("dead letter reason %q", dl.Error)
	}
	if len(pr.all()) != 0 {
		t.Error("violating output delivered")
	}
}

// TestMetadata: the pump injects from, thread, own name (agents only), the
// self-call flag and the agents' usage instructions.
func TestMetadata(t *testing.T) {
	pr := newProbe()
	worker := sink[Pong](t, "worker", pr)
	worker.Description = "does the work"
	boss := agent(listenerOf(t, "boss", func(_ context.Context, in *Ping, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		pr.record("boss", in, md)
		return xmlpipe.Send("worker", &Pong{Text: in.Text}), nil
	}), "worker")
	p := startPump(t, pump.Options{}, boss, worker)
	out := newRecorder()
	conv := mustSend(t, p, client, "boss", &Ping{Text: "t"}, out)
	out.waitFor(t, "completion", kind(pump.EventComplete))
	calls := pr.all()
	if len(calls) != 2 {
		t.Fatalf("%d calls, want 2", len(calls))
	}
	b, w := calls[0].MD, calls[1].MD
	if b.From != client || b.ThreadID != conv || b.OwnName != "boss" || b.IsSelfCall {
		t.Errorf("boss metadata %+v", b)
	}
	for _, want := range []string{"boss", "worker", "does the work", "<Pong>"} {
		if !strings.Contains(b.UsageInstructions, want) {
			t.Errorf("usage instructions lack %q:\n%s", want, b.UsageInstructions)
		}
	}
	if w.From != "boss" || w.OwnName != "" || w.UsageInstructions != "" || w.IsSelfCall || w.ThreadID == conv {
		t.Errorf("worker metadata %+v", w)
	}
}
