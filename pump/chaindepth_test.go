package pump_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// chainLimit is the MaxChainDepth of the chain-depth tests.
const chainLimit = 8

// cycle builds listeners a, b (and c) that forward a message round the
// ring a → b (→ c) → a, recording every handler call in calls; the call
// numbered stopAt (0: none) ends the chain instead.
func cycle(t *testing.T, size int, stopAt int64, calls *atomic.Int64, names *[]string) []pump.Listener {
	t.Helper()
	ring := []string{"a", "b", "c"}[:size]
	next := func(name string) (string, any) {
		for i, n := range ring {
			if n == name {
				to := ring[(i+1)%size]
				return to, map[string]any{"a": &ChainA{}, "b": &ChainB{}, "c": &ChainC{}}[to]
			}
		}
		panic(name)
	}
	step := func(name string) (xmlpipe.Response, error) {
		n := calls.Add(1)
		*names = append(*names, name) // one message in flight at a time: no race
		if n == stopAt {
			return nil, nil
		}
		to, payload := next(name)
		return xmlpipe.Send(to, payload), nil
	}
	ls := []pump.Listener{
		listenerOf(t, "a", func(context.Context, *ChainA, xmlpipe.Metadata) (xmlpipe.Response, error) { return step("a") }),
		listenerOf(t, "b", func(context.Context, *ChainB, xmlpipe.Metadata) (xmlpipe.Response, error) { return step("b") }),
		listenerOf(t, "c", func(context.Context, *ChainC, xmlpipe.Metadata) (xmlpipe.Response, error) { return step("c") }),
	}
	return ls[:size]
}

// TestChainDepthStopsCycles: listeners that forward to each other for ever
// are stopped after MaxChainDepth hops — the client hears why, naming the
// last listeners, the conversation's threads are freed and the organism
// serves the next conversation — while a finite chain as deep as the limit
// runs to its end.
func TestChainDepthStopsCycles(t *testing.T) {
	tests := []struct {
		name      string
		size      int
		stopAt    int64
		wantNames []string
		wantHuh   string // "" : no refusal
	}{
		{"two listeners forwarding to each other", 2, 0,
			[]string{"a", "b", "a", "b", "a", "b", "a", "b"},
			"The conversation exceeded 8 hops (… → b → a → b → a → b → a): the message from b to a was not sent. The conversation was stopped."},
		{"three listeners in a cycle", 3, 0,
			[]string{"a", "b", "c", "a", "b", "c", "a", "b"},
			"The conversation exceeded 8 hops (… → a → b → c → a → b → c): the message from b to c was not sent. The conversation was stopped."},
		{"a finite chain as deep as the limit", 3, chainLimit,
			[]string{"a", "b", "c", "a", "b", "c", "a", "b"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int64
			var names []string
			p := startPump(t, pump.Options{MaxChainDepth: chainLimit}, cycle(t, tt.size, tt.stopAt, &calls, &names)...)
			rec := newRecorder()
			thread := mustSend(t, p, client, "a", &ChainA{}, rec)
			rec.waitFor(t, "the conversation's end", kind(pump.EventComplete))

			if diff := cmp.Diff(tt.wantNames, names); diff != "" {
				t.Errorf("handler calls (-want +got):\n%s", diff)
			}
			var huhs []string
			for _, e := range rec.snapshot() {
				if e.Kind == pump.EventHuh {
					huhs = append(huhs, e.Error)
				}
			}
			var want []string
			if tt.wantHuh != "" {
				want = []string{tt.wantHuh}
			}
			if diff := cmp.Diff(want, huhs); diff != "" {
				t.Errorf("<huh> the client heard (-want +got):\n%s", diff)
			}
			st := p.Stats()
			if wantStopped := int64(len(want)); st.ChainsStopped != wantStopped {
				t.Errorf("Stats.ChainsStopped = %d, want %d", st.ChainsStopped, wantStopped)
			}
			if tt.wantHuh != "" && p.Threads().Known(thread) {
				t.Errorf("the stopped conversation's threads live on: %d threads", p.Threads().Len())
			}

			// The organism stays up: the next conversation runs.
			pr := newProbe()
			if err := p.AddListener(sink[Ping](t, "sink", pr)); err != nil {
				t.Fatal(err)
			}
			mustSend(t, p, client, "sink", &Ping{Text: "after"}, nil)
			if got := pr.next(t); got.Payload.(*Ping).Text != "after" {
				t.Errorf("next conversation delivered %+v", got.Payload)
			}
		})
	}
}

// TestChainDepthAgentHearsIt: an agent that keeps forwarding to itself gets
// a SystemError on its thread naming the limit (its thread lives on: it
// may still answer), and the organism stays up.
func TestChainDepthAgentHearsIt(t *testing.T) {
	heard := make(chan *xmlpipe.SystemError, 1)
	loop := agent(withErrorHandler(
		listenerOf(t, "looper", func(_ context.Context, m *Ping, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
			return xmlpipe.Send("looper", &Ping{Text: m.Text + "."}), nil
		}),
		func(_ context.Context, de *xmlpipe.DeliveryError, md xmlpipe.Metadata) (xmlpipe.Response, error) {
			heard <- de.System
			return nil, nil
		}))
	p := startPump(t, pump.Options{MaxChainDepth: chainLimit}, loop)
	mustSend(t, p, client, "looper", &Ping{Text: "go"}, nil)
	var got *xmlpipe.SystemError
	select {
	case got = <-heard:
	case <-waitCtx(t).Done():
		t.Fatal("timed out waiting for the agent's SystemError")
	}
	want := &xmlpipe.SystemError{Code: "routing", Message: "The conversation exceeded 8 hops " +
		"(… → looper → looper → looper → looper → looper → looper): the message from looper to looper was not sent."}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SystemError the agent heard (-want +got):\n%s", diff)
	}
	if got := p.Stats().ChainsStopped; got != 1 {
		t.Errorf("Stats.ChainsStopped = %d, want 1", got)
	}
}

// TestChainDepthSurvivesRecovery: a chain at the limit, restored after a
// restart with its message re-delivered, cannot forward one hop further.
func TestChainDepthSurvivesRecovery(t *testing.T) {
	threads := registry.NewThreads(registry.ThreadsConfig{})
	root := stage.NewThreadID()
	if err := threads.Begin(root, client, "a"); err != nil {
		t.Fatal(err)
	}
	deepest := root
	for hop := 2; hop <= chainLimit; hop++ {
		child, err := threads.Extend(deepest, []string{"b", "a"}[hop%2])
		if err != nil {
			t.Fatal(err)
		}
		deepest = child
	}
	var calls atomic.Int64
	var names []string
	p := startPump(t, pump.Options{MaxChainDepth: chainLimit, Threads: threads}, cycle(t, 2, 0, &calls, &names)...)
	rec := newRecorder()
	cancel := p.Subscribe(rec)
	defer cancel()
	env := stage.AppendEnvelope(nil, "a", "b", deepest, []byte(`<ChainB xmlns=""><Text></Text></ChainB>`))
	if err := p.Recover(waitCtx(t), pump.Recovered{Seq: 1, Envelope: env, Conversation: root, Thread: deepest}); err != nil {
		t.Fatalf("Recover: %v", err)
	}
	ev := rec.waitFor(t, "the refusal", kind(pump.EventDeadLetter))
	if !strings.Contains(ev.Error, "8 hops") {
		t.Errorf("dead letter %q does not name the limit", ev.Error)
	}
	if diff := cmp.Diff([]string{"b"}, names); diff != "" {
		t.Errorf("handler calls after recovery (-want +got):\n%s", diff)
	}
	// The dead letter is told before the chain's threads are freed: the
	// conversation's completion comes after.
	rec.waitFor(t, "the completion", kind(pump.EventComplete))
	if threads.Known(root) {
		t.Errorf("the recovered conversation's threads live on: %d threads", threads.Len())
	}
}

// TestChainDepthCountsHopsMadeElsewhere: a conversation that begins with
// hops made before it came (Principal.Hops: a peer organism's call) is held
// to MaxChainDepth counted from them — its listeners get the hops left —
// and one that comes with the limit reached already, or with a negative
// count, is refused before any listener runs; its sender is told why.
func TestChainDepthCountsHopsMadeElsewhere(t *testing.T) {
	tests := []struct {
		name      string
		hops      int
		wantNames []string // the handler calls
		wantErr   error    // what the injection returns
	}{
		{"none", 0, []string{"a", "b", "a", "b", "a", "b", "a", "b"}, nil},
		{"half the limit", chainLimit / 2, []string{"a", "b", "a", "b"}, nil},
		{"one hop left", chainLimit - 1, []string{"a"}, nil},
		{"the limit reached", chainLimit, nil, pump.ErrChainTooDeep},
		{"far beyond", 1 << 40, nil, pump.ErrChainTooDeep},
		{"negative", -1, nil, pump.ErrBadHops},
	}
	pt, err := xmlpipe.PayloadTypeOf[ChainA]()
	if err != nil {
		t.Fatal(err)
	}
	body, err := pt.AppendPayload(nil, &ChainA{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int64
			var names []string
			p := startPump(t, pump.Options{MaxChainDepth: chainLimit}, cycle(t, 2, 0, &calls, &names)...)
			rec := newRecorder()
			_, err := p.SendEnvelope(waitCtx(t), pump.Envelope{From: "peer", To: "a", Payload: body,
				As: &pump.Principal{From: "peer", Hops: tt.hops}}, rec)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("SendEnvelope at %d hops: %v, want %v", tt.hops, err, tt.wantErr)
			}
			if tt.wantErr != nil {
				rec.waitFor(t, "the refusal", kind(pump.EventHuh))
			} else {
				rec.waitFor(t, "the conversation's end", kind(pump.EventComplete))
			}
			if diff := cmp.Diff(tt.wantNames, names); diff != "" {
				t.Errorf("handler calls (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTooDeepErrorStopsTheConversation: a handler failing with a
// *pump.TooDeepError (a federated call the peer refused for its hop limit)
// is treated as a forward the pump refused itself: a sender that hears
// errors is told on its thread and the conversation goes on; any other
// sender's conversation is stopped, its outside party told the error's
// text (marked ChainTooDeep, which a gateway passes on to its caller) —
// not left to end as if the call had nothing to say.
func TestTooDeepErrorStopsTheConversation(t *testing.T) {
	const why = "The conversation exceeded its hop limit at the peer."
	for _, tt := range []struct {
		name       string
		hears      bool
		wantClient []pump.Event // the <huh>s the client is told (Kind, Error, ChainTooDeep)
	}{
		{"a sender that hears errors", true, nil},
		{"a sender that does not", false, []pump.Event{{Kind: pump.EventHuh, Error: why, ChainTooDeep: true}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			heard := make(chan string, 1)
			sender := listenerOf(t, "a", func(_ context.Context, _ *ChainA, md xmlpipe.Metadata) (xmlpipe.Response, error) {
				return xmlpipe.Send("b", &ChainB{}), nil
			})
			if tt.hears {
				sender = withErrorHandler(sender, func(_ context.Context, de *xmlpipe.DeliveryError, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
					heard <- de.Detail
					return xmlpipe.Respond(&ChainA{Text: "recovered"}), nil
				})
			}
			proxy := listenerOf(t, "b", func(context.Context, *ChainB, xmlpipe.Metadata) (xmlpipe.Response, error) {
				return nil, fmt.Errorf("call refused: %w", &pump.TooDeepError{Why: why})
			})
			p := startPump(t, pump.Options{MaxChainDepth: chainLimit}, sender, proxy)
			rec := newRecorder()
			thread := mustSend(t, p, client, "a", &ChainA{}, rec)
			rec.waitFor(t, "the conversation's end", kind(pump.EventComplete))
			var huhs []pump.Event
			for _, e := range rec.snapshot() {
				if e.Kind == pump.EventHuh {
					huhs = append(huhs, pump.Event{Kind: e.Kind, Error: e.Error, ChainTooDeep: e.ChainTooDeep})
				}
			}
			if diff := cmp.Diff(tt.wantClient, huhs); diff != "" {
				t.Errorf("<huh>s the client heard (-want +got):\n%s", diff)
			}
			if tt.hears {
				if got := <-heard; !strings.Contains(got, why) {
					t.Errorf("the sender heard %q, want it to say %q", got, why)
				}
				return
			}
			if p.Threads().Known(thread) {
				t.Errorf("the stopped conversation's threads live on")
			}
			if got := p.Stats().ChainsStopped; got != 1 {
				t.Errorf("Stats.ChainsStopped = %d, want 1", got)
			}
		})
	}
}
