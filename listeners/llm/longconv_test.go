package llm

import (
	"context"
	"fmt"
	"testing"

	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// BenchmarkLongConversationTurn measures one turn of a conversation that
// has gone on for depth turns (every fifth with a tool call): the agent's
// own work for the caller's next message and the model's text answer,
// against a model that answers at once. live: the history as the process
// recorded it; restored: as a restart restores it (payloads not decoded).
// A turn's cost should not grow much with depth beyond the request it has
// to build.
func BenchmarkLongConversationTurn(b *testing.B) {
	for _, restored := range []bool{false, true} {
		for _, depth := range []int{10, 300} {
			name := fmt.Sprintf("depth=%d/live", depth)
			if restored {
				name = fmt.Sprintf("depth=%d/restored", depth)
			}
			b.Run(name, func(b *testing.B) { benchLongTurn(b, depth, restored) })
		}
	}
}

func benchLongTurn(b *testing.B, depth int, restored bool) {
	cb, err := registry.NewContextBuffer(registry.ContextConfig{MaxThreads: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	own, err := InputType("mathbot")
	if err != nil {
		b.Fatal(err)
	}
	model := ChatterFunc(func(_ context.Context, r Request) (Reply, error) {
		last := r.Messages[len(r.Messages)-1]
		if last.Role == User && len(r.Messages)%10 == 3 {
			return Reply{ToolCalls: []ToolCall{newToolCall(fmt.Sprintf("c%d", len(r.Messages)), "calc",
				[]byte(`{"Expression":"6*7"}`))}}, nil
		}
		return Reply{Content: "The answer, with a few words around it so it is not empty."}, nil
	})
	a := &Agent{Name: "mathbot", Prompt: "You are mathbot.", LLM: model, History: cb, Threads: fakeThreads{},
		Lookup: func(name string) (*xmlpipe.PayloadType, bool) { return own, name == "mathbot" }}
	peers := []xmlpipe.Peer{{Name: "calc", Description: "Evaluates arithmetic", Payload: mustPT[Calc](b)}}
	ctx := context.Background()
	deliver := func(thread, from string, text, ref string) xmlpipe.Response {
		v, _ := stage.NewTextPayload(own.GoType(), text)
		raw, _ := own.AppendPayload(nil, v)
		if _, err := cb.AppendShared(registry.Slot{ThreadID: thread, From: from, To: "mathbot", PayloadType: own.Name(),
			Payload: v, Raw: raw, InReplyTo: ref}); err != nil {
			b.Fatal(err)
		}
		resp, err := a.Handle(ctx, v, xmlpipe.Metadata{ThreadID: thread, From: from, InReplyTo: ref, Peers: peers})
		if err != nil {
			b.Fatal(err)
		}
		return resp
	}
	// turn runs one whole turn: the task, then the call's answer if the
	// model made one.
	turn := func(thread string, k int) {
		resp := deliver(thread, "console", fmt.Sprintf("turn %d: what is %d*7, and say it in words?", k, k), "")
		if s, ok := resp.(*xmlpipe.SendsResponse); ok {
			deliver(thread, "calc", `{"Expression":"6*7","Value":"42"}`, s.Sends[0].Ref)
		}
	}
	base := "base"
	for k := range depth {
		turn(base, k)
	}
	tc, _ := cb.Thread(base)
	slots := tc.Slots()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		thread := fmt.Sprintf("t%d", i)
		copied := make([]registry.Slot, len(slots))
		for j, s := range slots {
			s.ThreadID = thread
			if restored {
				s.Payload = nil
			}
			copied[j] = s
		}
		if err := cb.Restore(copied); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		turn(thread, depth)
		b.StopTimer()
		cb.DeleteThread(thread)
		b.StartTimer()
	}
}
