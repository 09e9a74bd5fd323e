package bus

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/llmtest"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// TestStreamStreamedRepliesSaySo: on the /api/v1/ws event stream (the
// dashboard's), the message event of an agent's reply whose text the
// socket's delta events carried whole says "streamed": true, so a client
// that drew the deltas draws the text once; a socket subscribed to no
// deltas gets the same event without the mark.
func TestStreamStreamedRepliesSaySo(t *testing.T) {
	m := llmtest.NewChatModel(t, func(int) []string { return []string{"It is ", "42."} })
	f := newFixtureWith(t, toolAgentOrganism(m.URL))
	token := f.loginAs("alice", auth.Operator)

	type shown struct{ Event, Text string }
	// follow reads sock's events until the conversation's thread_updated:
	// deltas joined per stream, each outbound message as its payload or
	// "(streamed)".
	follow := func(sock *websocket.Conn) []shown {
		var out []shown
		for {
			fr := readFrame(t, sock)
			switch fr["event"] {
			case "delta":
				text, _ := fr["text"].(string)
				if n := len(out); n > 0 && out[n-1].Event == "delta" {
					out[n-1].Text += text
				} else {
					out = append(out, shown{"delta", text})
				}
			case "message":
				msg, _ := fr["message"].(map[string]any)
				if msg["direction"] != "outbound" {
					continue
				}
				if fr["streamed"] == true {
					out = append(out, shown{"reply", "(streamed)"})
				} else {
					out = append(out, shown{"reply", msg["payload_type"].(string)})
				}
			case "thread_updated":
				return out
			}
		}
	}
	for _, tc := range []struct {
		name   string
		events []string
		want   []shown
	}{
		{"with deltas", []string{"delta", "message", "thread_updated"},
			[]shown{{"delta", "It is 42."}, {"reply", "(streamed)"}}},
		{"without deltas", []string{"message", "thread_updated"}, []shown{{"reply", "AgentAnswer"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stream := f.dial("/api/v1/ws", token)
			readFrame(t, stream) // connected
			writeFrame(t, stream, frame{"cmd": "subscribe", "events": tc.events})
			if got := readFrame(t, stream); got["event"] != "subscribed" {
				t.Fatalf("subscribe: %v", got)
			}
			ws := f.dial("/ws", token)
			readFrame(t, ws) // connected
			sendOn(t, ws, "", "what is 6*7?")
			if d := cmp.Diff(tc.want, follow(stream)); d != "" {
				t.Errorf("the stream (-want +got):\n%s", d)
			}
		})
	}
}
