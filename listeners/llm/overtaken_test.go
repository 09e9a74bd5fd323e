package llm

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// hookedModel is a scriptModel that runs hook during its first request,
// before it answers.
type hookedModel struct {
	*scriptModel
	hook func()
}

func (m *hookedModel) Chat(ctx context.Context, r Request) (Reply, error) {
	if len(m.requests()) == 0 {
		m.hook()
	}
	return m.scriptModel.Chat(ctx, r)
}

// TestCallerOvertakesTheModel: the caller's next message arrives while the
// model is answering its last one (its handling waits for the
// conversation). The reply made without it is dropped, not recorded after
// it, and the newer message's handling asks the model once with both
// messages in order: the conversation gets one answer, never one on a
// thread the first answer ended, and no request ends with the agent's own
// words.
func TestCallerOvertakesTheModel(t *testing.T) {
	tests := []struct {
		name  string
		first Reply
	}{
		{"an answer", Reply{Content: "answer 1"}},
		{"tool calls", Reply{ToolCalls: []ToolCall{toolCall("c1", "poet", `{"Text":"rain"}`)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newLoopRig(t, tt.first, Reply{Content: "answer to both"})
			second := make(chan xmlpipe.Response, 1)
			r.a.LLM = &hookedModel{scriptModel: r.model, hook: func() {
				// As the pump does: the message is recorded, then handed
				// to the agent, whose handling waits for the first one.
				v, _ := stage.NewTextPayload(r.own.GoType(), "second")
				raw, err := r.own.AppendPayload(nil, v)
				if err != nil {
					t.Error(err)
				}
				if _, err := r.cb.Append(registry.Slot{ThreadID: "t", From: "console", To: "mathbot",
					PayloadType: r.own.Name(), Payload: v, Raw: raw}); err != nil {
					t.Error(err)
				}
				go func() {
					resp, err := r.a.Handle(context.Background(), v, xmlpipe.Metadata{ThreadID: "t", From: "console",
						OwnName: "mathbot", Peers: r.peers})
					if err != nil {
						t.Error(err)
					}
					second <- resp
				}()
			}}
			if resp := r.deliver("console", "first", ""); !isAwait(resp) {
				t.Fatalf("the first message's handling answered %#v; want it to leave the answer to the newer one", resp)
			}
			if got := answerText(<-second); got != "answer to both" {
				t.Fatalf("the second message's answer %q", got)
			}
			reqs := r.model.requests()
			if len(reqs) != 2 {
				t.Fatalf("%d model requests, want 2", len(reqs))
			}
			var got []Message
			for _, m := range reqs[1].Messages {
				if m.Role != System {
					got = append(got, Message{Role: m.Role, Content: m.Content})
				}
			}
			want := []Message{{Role: User, Content: "[From console]\nfirst"}, {Role: User, Content: "[From console]\nsecond"}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("the second request's conversation (-want +got):\n%s", diff)
			}
		})
	}
}
