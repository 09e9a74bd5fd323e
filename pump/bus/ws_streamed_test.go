package bus

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/llmtest"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// toolAgentOrganism is agentOrganism with poet given the calculate tool.
func toolAgentOrganism(url string) buildFunc {
	return func(o organism.Options) (*organism.Organism, error) {
		cfg, err := config.Parse("organism.yaml", []byte(`organism: {name: chat}
llm:
  retries: 0
  backends:
    - {provider: openai, name: local, base_url: `+url+`, model: test-model}
listeners:
  - name: poet
    agent: true
    description: Writes short poems
    prompt: You are poet.
    tools: [calculate]
`))
		if err != nil {
			return nil, err
		}
		return organism.New(cfg, o)
	}
}

// TestWSStreamedFramesSaySo: a /ws client that renders delta frames and
// then the output and reply frames can show each text once — the output
// frame of the agent's interim text (what it wrote beside its tool call)
// and the reply frame of its answer say "streamed": true when the deltas
// carried their text whole. A socket subscribed to no deltas gets the same
// frames without the mark (it must show their text), as old clients
// always did.
func TestWSStreamedFramesSaySo(t *testing.T) {
	m := llmtest.NewChatModel(t, func(n int) []string {
		if n%2 == 0 {
			return []string{"Let me ", "compute.", llmtest.ToolCall("c1", "calculate", `{"Expression":"6*7"}`)}
		}
		return []string{"It is ", "42."}
	})
	f := newFixtureWith(t, toolAgentOrganism(m.URL))
	token := f.loginAs("alice", auth.Operator)

	// shown is what a client rendering every frame would show, one entry a
	// frame: deltas joined per stream, output and reply text unless marked.
	type shown struct{ Type, Text string }
	render := func(frames []frame) []shown {
		var out []shown
		for _, fr := range frames {
			text, _ := fr["text"].(string)
			switch fr["type"] {
			case "delta":
				if n := len(out); n > 0 && out[n-1].Type == "delta+" {
					out[n-1].Text += text
				} else {
					out = append(out, shown{"delta+", text})
				}
				if fr["end"] == true {
					out[len(out)-1].Type = "delta"
				}
			case "output", "reply":
				if fr["streamed"] == true {
					out = append(out, shown{fr["type"].(string) + " (streamed)", ""})
				} else {
					out = append(out, shown{fr["type"].(string), text})
				}
			}
		}
		return out
	}

	ws := f.dial("/ws", token)
	readFrame(t, ws) // connected
	_, frames := sendOn(t, ws, "", "what is 6*7?")
	want := []shown{{"delta", "Let me compute."}, {"output (streamed)", ""}, {"delta", "It is 42."},
		{"reply (streamed)", ""}}
	if d := cmp.Diff(want, render(frames)); d != "" {
		t.Errorf("a client rendering deltas (-want +got):\n%s\nframes: %v", d, frames)
	}

	old := f.dial("/ws", token)
	readFrame(t, old) // connected
	writeFrame(t, old, frame{"type": "subscribe", "id": "s", "events": []string{"output", "reply", "complete"}})
	if got := readFrame(t, old); got["type"] != "subscribed" {
		t.Fatalf("subscribe: %v", got)
	}
	_, frames = sendOn(t, old, "", "and again?")
	want = []shown{{"output", "Let me compute."}, {"reply", "It is 42."}}
	if d := cmp.Diff(want, render(frames)); d != "" {
		t.Errorf("a client without deltas (-want +got):\n%s\nframes: %v", d, frames)
	}
}
