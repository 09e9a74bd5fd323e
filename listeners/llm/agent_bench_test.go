package llm

import (
	"context"
	"fmt"
	"testing"

	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// BenchmarkNativeTurn measures the agent loop's own work in one turn with
// a tool call — the task, the call sent, its answer, the final answer —
// against a model that answers at once (no HTTP, no pump).
func BenchmarkNativeTurn(b *testing.B) {
	cb, err := registry.NewContextBuffer(registry.ContextConfig{MaxThreads: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	own, err := InputType("mathbot")
	if err != nil {
		b.Fatal(err)
	}
	model := ChatterFunc(func(_ context.Context, r Request) (Reply, error) {
		if err := r.Validate(); err != nil {
			return Reply{}, err
		}
		if r.Messages[len(r.Messages)-1].Role == Tool {
			return Reply{Content: "42"}, nil
		}
		return Reply{ToolCalls: []ToolCall{newToolCall("c1", "calc", []byte(`{"Expression":"6*7"}`))}}, nil
	})
	a := &Agent{Name: "mathbot", Prompt: "You are mathbot.", LLM: model, History: cb, Threads: fakeThreads{},
		Lookup: func(name string) (*xmlpipe.PayloadType, bool) { return own, name == "mathbot" }}
	peers := []xmlpipe.Peer{{Name: "calc", Description: "Evaluates arithmetic", Payload: mustPT[Calc](b)}}
	task, _ := stage.NewTextPayload(own.GoType(), "what is 6*7?")
	taskRaw, _ := own.AppendPayload(nil, task)
	answer, _ := stage.NewTextPayload(own.GoType(), `{"Expression":"6*7","Value":"42"}`)
	answerRaw, _ := own.AppendPayload(nil, answer)
	ctx := context.Background()
	b.ReportAllocs()
	for i := range b.N {
		thread := fmt.Sprintf("t%d", i)
		deliver := func(from string, v any, raw []byte, ref string) xmlpipe.Response {
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
		if _, ok := deliver("console", task, taskRaw, "").(*xmlpipe.SendsResponse); !ok {
			b.Fatal("no send")
		}
		if _, ok := deliver("calc", answer, answerRaw, "c1").(*xmlpipe.RespondResponse); !ok {
			b.Fatal("no answer")
		}
		cb.DeleteThread(thread)
	}
}

// ChatterFunc adapts a function to Chatter (tests).
type ChatterFunc func(ctx context.Context, r Request) (Reply, error)

// Chat calls f.
func (f ChatterFunc) Chat(ctx context.Context, r Request) (Reply, error) { return f(ctx, r) }
