package pump_test

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// errChainFailed is the failure of a chain's hop in the tests below.
var errChainFailed = errors.New("hop failed")

// TestFailedHopEndsWithItsConversation: a hop that can be answered no more
// — its handler failed (an error, a panic; its sender got a <huh>), or its
// message was refused before any handler saw it (no route, outside the
// thread's profile) — ends with its conversation, and so does the spent
// chain above it: once the conversation completes only its root is live,
// not the failed hop's thread (and its sender's) until the TTL.
func TestFailedHopEndsWithItsConversation(t *testing.T) {
	tests := []struct {
		name string
		// b is b's handler; c's handler fails with errChainFailed.
		b func(in *ChainB) (xmlpipe.Response, error)
		// profiles, when set, are the pump's and the conversation runs
		// under the first.
		profiles []pump.ProfileDef
		// agent makes b an agent (peer c): a failed agent hop ends too.
		agent bool
	}{
		{
			name: "b fails",
			b:    func(*ChainB) (xmlpipe.Response, error) { return nil, errChainFailed },
		},
		{
			name: "b panics",
			b:    func(*ChainB) (xmlpipe.Response, error) { panic(errChainFailed) },
		},
		{
			name: "c fails",
			b: func(in *ChainB) (xmlpipe.Response, error) {
				return xmlpipe.Send("c", &ChainC{Text: in.Text}), nil
			},
		},
		{
			name: "b sends to no listener",
			b: func(in *ChainB) (xmlpipe.Response, error) {
				return xmlpipe.Send("nonesuch", &ChainC{Text: in.Text}), nil
			},
		},
		{
			name: "b sends outside the profile",
			b: func(in *ChainB) (xmlpipe.Response, error) {
				return xmlpipe.Send("c", &ChainC{Text: in.Text}), nil
			},
			profiles: []pump.ProfileDef{{Name: "no-c", Listeners: []string{"a", "b"}}},
		},
		{
			name:  "agent b fails",
			b:     func(*ChainB) (xmlpipe.Response, error) { return nil, errChainFailed },
			agent: true,
		},
		{
			name:  "agent b panics",
			b:     func(*ChainB) (xmlpipe.Response, error) { panic(errChainFailed) },
			agent: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := listenerOf(t, "a", func(_ context.Context, in *ChainA, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
				return xmlpipe.Send("b", &ChainB{Text: in.Text}), nil
			})
			b := listenerOf(t, "b", func(_ context.Context, in *ChainB, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
				return tc.b(in)
			})
			if tc.agent {
				b = agent(b, "c")
			}
			c := listenerOf(t, "c", func(context.Context, *ChainC, xmlpipe.Metadata) (xmlpipe.Response, error) {
				return nil, errChainFailed
			})
			ctx := waitCtx(t)
			var p *pump.Pump
			if tc.profiles != nil {
				p = profiled(t, tc.profiles, a, b, c)
				ctx = pump.WithProfile(ctx, tc.profiles[0].Name)
			} else {
				p = startPump(t, pump.Options{}, a, b, c)
			}
			out := newRecorder()
			conv, err := p.Send(ctx, client, "a", &ChainA{Text: "go"}, out)
			if err != nil {
				t.Fatalf("Send: %v", err)
			}
			out.waitFor(t, "completion", kind(pump.EventComplete))
			if diff := cmp.Diff([]string{conv}, liveThreads(p)); diff != "" {
				t.Errorf("live threads once the conversation completed (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFailedAgentHopLeavesTheConversationToContinue: ending a failed agent
// hop's thread with its conversation (TestFailedHopEndsWithItsConversation)
// keeps what a continuation needs. The client continues the conversation
// on its root: a failed agent at the root still finds its history there;
// an agent below the root that failed is reached again, on a new thread,
// and the continuation then ends with only its root live. An agent that
// awaits answers (xmlpipe.Await) keeps its thread even when a later turn
// of it fails.
func TestFailedAgentHopLeavesTheConversationToContinue(t *testing.T) {
	t.Run("agent at the root", func(t *testing.T) {
		var p *pump.Pump
		var calls atomic.Int32
		chat := agent(listenerOf(t, "chat", func(_ context.Context, in *Bounce, md xmlpipe.Metadata) (xmlpipe.Response, error) {
			if calls.Add(1) == 1 {
				return nil, errChainFailed
			}
			n := 0
			if tc, ok := p.Context().Thread(md.ThreadID); ok {
				n = tc.Len()
			}
			return xmlpipe.Respond(&Bounce{Text: in.Text + " after " + strconv.Itoa(n)}), nil
		}))
		p = startPump(t, pump.Options{}, chat)
		alice := pump.Principal{From: "websocket:alice", User: "alice"}
		thread := stage.NewThreadID()
		out := newRecorder()
		if _, err := p.InjectAs(waitCtx(t), envelope(alice.From, "chat", thread, `<Bounce xmlns=""><Text>one</Text></Bounce>`),
			out, alice); err != nil {
			t.Fatal(err)
		}
		out.waitFor(t, "completion", kind(pump.EventComplete))
		if diff := cmp.Diff([]string{thread}, liveThreads(p)); diff != "" {
			t.Errorf("live threads once the failed conversation completed (-want +got):\n%s", diff)
		}
		out = newRecorder()
		if _, err := p.InjectAs(waitCtx(t), envelope(alice.From, "chat", thread, `<Bounce xmlns=""><Text>two</Text></Bounce>`),
			out, alice); err != nil {
			t.Fatal(err)
		}
		reply := out.waitFor(t, "reply", kind(pump.EventReply))
		if got, want := reply.Payload.(*Bounce).Text, "two after 2"; got != want {
			t.Errorf("continuation answered %q, want %q (the history of the failed first message)", got, want)
		}
	})
	t.Run("agent below the root", func(t *testing.T) {
		var threads chainThreads
		var calls atomic.Int32
		a := listenerOf(t, "a", func(_ context.Context, in *ChainA, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
			return xmlpipe.Send("b", &ChainB{Text: in.Text}), nil
		})
		b := agent(listenerOf(t, "b", func(_ context.Context, in *ChainB, md xmlpipe.Metadata) (xmlpipe.Response, error) {
			if calls.Add(1) == 1 {
				threads.ran("failed", md.ThreadID)
				return nil, errChainFailed
			}
			threads.ran("continued", md.ThreadID)
			return nil, nil
		}))
		p := startPump(t, pump.Options{}, a, b)
		out := newRecorder()
		conv := mustSend(t, p, client, "a", &ChainA{Text: "go"}, out)
		out.waitFor(t, "completion", kind(pump.EventComplete))
		if diff := cmp.Diff([]string{conv}, liveThreads(p)); diff != "" {
			t.Errorf("live threads once the failed conversation completed (-want +got):\n%s", diff)
		}
		out = newRecorder()
		if _, err := p.InjectWait(waitCtx(t), envelope(client, "a", conv, `<ChainA xmlns=""><Text>again</Text></ChainA>`),
			out); err != nil {
			t.Fatal(err)
		}
		if ev := out.waitFor(t, "completion", kind(pump.EventComplete)); ev.Error != "" {
			t.Fatalf("the continuation completed with %q", ev.Error)
		}
		if threads.of("continued") == "" || threads.of("continued") == threads.of("failed") {
			t.Errorf("the continuation reached b on %q, the failed hop ran on %q: want a new thread",
				threads.of("continued"), threads.of("failed"))
		}
		if diff := cmp.Diff([]string{conv}, liveThreads(p)); diff != "" {
			t.Errorf("live threads once the continuation completed (-want +got):\n%s", diff)
		}
	})
	t.Run("agent that awaits", func(t *testing.T) {
		var threads chainThreads
		a := listenerOf(t, "a", func(_ context.Context, in *ChainA, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
			return xmlpipe.Send("b", &ChainB{Text: in.Text}), nil
		})
		b := agent(listenerOf(t, "b", func(_ context.Context, in *ChainB, md xmlpipe.Metadata) (xmlpipe.Response, error) {
			threads.ran("b", md.ThreadID)
			if in.Text == "answer" { // the answer b awaited: this turn fails
				return nil, errChainFailed
			}
			return xmlpipe.Await(), nil
		}))
		p := startPump(t, pump.Options{}, a, b)
		out := newRecorder()
		conv := mustSend(t, p, client, "a", &ChainA{Text: "go"}, out)
		out.waitFor(t, "completion", kind(pump.EventComplete))
		out = newRecorder()
		if _, err := p.InjectWait(waitCtx(t), envelope(client, "b", threads.of("b"), `<ChainB xmlns=""><Text>answer</Text></ChainB>`),
			out); err != nil {
			t.Fatal(err)
		}
		out.waitFor(t, "completion", kind(pump.EventComplete))
		if diff := cmp.Diff(sorted(conv, threads.of("b")), liveThreads(p)); diff != "" {
			t.Errorf("live threads once the failed answer's turn completed (-want +got):\n%s", diff)
		}
	})
}
