package llm

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// longConv is an agent holding a long conversation with "console", every
// fifth turn or so with a call of calc, against a model that answers at
// once (no HTTP, no pump: the test plays the pump's part).
type longConv struct {
	tb    testing.TB
	cb    *registry.ContextBuffer
	own   *xmlpipe.PayloadType
	peers []xmlpipe.Peer
	mode  string
	a     *Agent
	// last is the latest request's messages.
	last []Message
}

// newLongConv returns a longConv whose agent is configured for mode:
// "window" gives it a small context window (2048 tokens), so its requests
// are bounded whatever the depth; "librarian" the same, curated; any other
// the defaults.
func newLongConv(tb testing.TB, mode string) *longConv {
	cb, err := registry.NewContextBuffer(registry.ContextConfig{MaxThreads: 1 << 20})
	if err != nil {
		tb.Fatal(err)
	}
	own, err := InputType("mathbot")
	if err != nil {
		tb.Fatal(err)
	}
	lc := &longConv{tb: tb, cb: cb, own: own, mode: mode,
		peers: []xmlpipe.Peer{{Name: "calc", Description: "Evaluates arithmetic", Payload: mustPT[Calc](tb)}}}
	lc.a = lc.newAgent()
	return lc
}

// newAgent is a fresh agent over the conversation's history: after a
// restart.
func (lc *longConv) newAgent() *Agent {
	model := ChatterFunc(func(_ context.Context, r Request) (Reply, error) {
		if err := r.Validate(); err != nil {
			return Reply{}, err
		}
		lc.last = r.Messages
		last := r.Messages[len(r.Messages)-1]
		if last.Role == User && len(r.Messages)%10 == 3 {
			return Reply{ToolCalls: []ToolCall{newToolCall(fmt.Sprintf("c%d", len(r.Messages)), "calc",
				[]byte(`{"Expression":"6*7"}`))}}, nil
		}
		return Reply{Content: "The answer, with a few words around it so it is not empty."}, nil
	})
	a := &Agent{Name: "mathbot", Prompt: "You are mathbot.", LLM: model, History: lc.cb, Threads: fakeThreads{},
		Lookup: func(name string) (*xmlpipe.PayloadType, bool) { return lc.own, name == "mathbot" },
		Logger: slog.New(slog.DiscardHandler)}
	switch lc.mode {
	case "window":
		a.ContextWindow = 2048
	case "librarian":
		a.ContextWindow, a.Librarian = 2048, &Librarian{FoldBelow: 0.08, UnfoldAbove: 0.2, KeepRecent: 2}
	}
	return a
}

// deliver hands the agent a message on thread as the pump would.
func (lc *longConv) deliver(thread, from, text, ref string) xmlpipe.Response {
	v, _ := stage.NewTextPayload(lc.own.GoType(), text)
	raw, _ := lc.own.AppendPayload(nil, v)
	if _, err := lc.cb.AppendShared(registry.Slot{ThreadID: thread, From: from, To: "mathbot",
		PayloadType: lc.own.Name(), Payload: v, Raw: raw, InReplyTo: ref}); err != nil {
		lc.tb.Fatal(err)
	}
	resp, err := lc.a.Handle(context.Background(), v, xmlpipe.Metadata{ThreadID: thread, From: from, InReplyTo: ref,
		Peers: lc.peers})
	if err != nil {
		lc.tb.Fatal(err)
	}
	return resp
}

// turn runs turn k on thread: the caller's message, then the call's answer
// if the model made one; the turn must end with the agent's answer.
func (lc *longConv) turn(thread string, k int) {
	resp := lc.deliver(thread, "console", fmt.Sprintf("turn %d: what is %d*7, and say it in words?", k, k), "")
	if s, ok := resp.(*xmlpipe.SendsResponse); ok {
		resp = lc.deliver(thread, "calc", `{"Expression":"6*7","Value":"42"}`, s.Sends[0].Ref)
	}
	if _, ok := resp.(*xmlpipe.RespondResponse); !ok {
		lc.tb.Fatalf("turn %d ended with %T, not an answer", k, resp)
	}
}

// restore copies thread's history to a new thread as a restart restores
// it — without its decoded payloads — and gives the conversation a fresh
// agent; it returns the new thread.
func (lc *longConv) restore(thread string) string {
	tc, _ := lc.cb.Thread(thread)
	slots := tc.Slots()
	restored := thread + "-restored"
	for j := range slots {
		slots[j].ThreadID, slots[j].Payload = restored, nil
	}
	if err := lc.cb.Restore(slots); err != nil {
		lc.tb.Fatal(err)
	}
	lc.a = lc.newAgent()
	return restored
}

// BenchmarkLongConversationTurn measures one turn of a conversation that
// has gone on for depth turns: the agent's own work for the caller's next
// message (and the call's answer, every fifth turn or so) up to the
// model's text answer. live: the history as the process recorded it;
// restored: as a restart restores it, read by an agent that never saw it;
// window and librarian: see newLongConv. The conversation goes on for b.N
// more turns: run with a fixed -benchtime (e.g. 200x) so its depth barely
// moves. A turn's cost should not grow with depth beyond the request it
// has to build (window: not at all).
func BenchmarkLongConversationTurn(b *testing.B) {
	for _, mode := range []string{"live", "restored", "window", "librarian"} {
		for _, depth := range []int{10, 300, 1000} {
			b.Run(fmt.Sprintf("%s/depth=%d", mode, depth), func(b *testing.B) {
				lc := newLongConv(b, mode)
				thread := "base"
				for k := range depth {
					lc.turn(thread, k)
				}
				if mode == "restored" {
					thread = lc.restore(thread)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					lc.turn(thread, depth+i)
				}
			})
		}
	}
}

// TestLongConversationTurnCost: a turn of a conversation whose requests the
// context window bounds — plainly or curated by the librarian, whose
// segments, scores' vectors and recorded tiers are kept between model
// calls — costs what the window holds, not what the
// conversation does: the allocations of turns at depth 600 are about
// those at depth 40, not fifteen times as many (the whole history read,
// split and rendered again at every turn: a conversation of n turns cost
// O(n²)). So after a restart, once its first turn has read the history.
func TestLongConversationTurnCost(t *testing.T) {
	for _, tc := range []struct {
		mode    string
		restart bool
	}{{"window", false}, {"window", true}, {"librarian", false}, {"librarian", true}} {
		mode, restart := tc.mode, tc.restart
		t.Run(fmt.Sprintf("%s/restart=%v", mode, restart), func(t *testing.T) {
			lc := newLongConv(t, mode)
			thread := "long"
			mallocs := func(from, n int) float64 {
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				for k := from; k < from+n; k++ {
					lc.turn(thread, k)
				}
				runtime.ReadMemStats(&after)
				return float64(after.Mallocs-before.Mallocs) / float64(n)
			}
			for k := range 40 {
				lc.turn(thread, k)
			}
			shallow := mallocs(40, 20)
			for k := 60; k < 600; k++ {
				lc.turn(thread, k)
			}
			if restart {
				thread = lc.restore(thread)
				lc.turn(thread, 600)
			}
			deep := mallocs(601, 20)
			if deep > 2*shallow {
				t.Errorf("a turn at depth 600 allocates %.0f times, at depth 40 %.0f: the cost grows with the "+
					"conversation", deep, shallow)
			}
		})
	}
}

// TestLongConversationBegunAgain: a thread whose history was deleted (its
// conversation ended, or was collected) and that begins again under the
// same id is read afresh: the model sees none of the old conversation the
// agent read before.
func TestLongConversationBegunAgain(t *testing.T) {
	lc := newLongConv(t, "live")
	for k := range 5 {
		lc.turn("again", k)
	}
	lc.cb.DeleteThread("again")
	lc.turn("again", 100)
	var users []string
	for _, m := range lc.last {
		if m.Role == User {
			users = append(users, m.Content)
		}
	}
	want := []string{"[From console]\nturn 100: what is 100*7, and say it in words?"}
	if d := cmp.Diff(want, users); d != "" {
		t.Errorf("the model's user messages (-want +got):\n%s", d)
	}
}
