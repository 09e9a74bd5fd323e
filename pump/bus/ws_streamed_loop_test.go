package bus

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/aeiou"
	"github.com/xml-pipeline/xmlpipe/listeners/llm/llmtest"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// TestWSStreamedLoopInterim: the interim text of a turn an agent's loop
// control continued, and its final answer, reach a client rendering deltas
// marked streamed — though the stream showed each with its token line cut
// and the frames carry the text without it.
func TestWSStreamedLoopInterim(t *testing.T) {
	var m *llmtest.ChatModel
	magic := func(action string) []string {
		return []string{llmtest.ToolCall("m-"+action, aeiou.ToolName, `{"kind":"LOOP","payload":{"action":"`+action+`"}}`)}
	}
	token := func(n int) string {
		msgs := m.Request(t, n)
		for i := len(msgs) - 1; i >= 0; i-- {
			if msgs[i].Role == "tool" {
				return msgs[i].Content
			}
		}
		return ""
	}
	m = llmtest.NewChatModel(t, func(n int) []string {
		switch n {
		case 0:
			return magic("continue")
		case 1:
			return []string{"Step ", "one.\n", token(n)}
		case 2:
			return magic("done")
		}
		return []string{"All ", "done.\n", token(n)}
	})
	f := newFixtureWith(t, func(o organism.Options) (*organism.Organism, error) {
		cfg, err := config.Parse("organism.yaml", []byte(`organism: {name: loops}
llm:
  retries: 0
  backends:
    - {provider: openai, name: local, base_url: `+m.URL+`, model: test-model}
listeners:
  - name: poet
    agent: true
    description: Plans in steps
    prompt: You are poet.
    loop_control: aeiou
`))
		if err != nil {
			return nil, err
		}
		return organism.New(cfg, o)
	})
	ws := f.dial("/ws", f.loginAs("alice", auth.Operator))
	readFrame(t, ws) // connected
	_, frames := sendOn(t, ws, "", "plan it")
	var got []string
	for _, fr := range frames {
		if fr["type"] == "output" || fr["type"] == "reply" {
			got = append(got, fr["type"].(string)+" "+fr["text"].(string)+" streamed="+map[bool]string{true: "yes", false: "no"}[fr["streamed"] == true])
		}
	}
	want := []string{"output Step one. streamed=yes", "reply All done. streamed=yes"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s\nframes: %v", d, frames)
	}
}
