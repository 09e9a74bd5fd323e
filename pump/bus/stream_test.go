package bus

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

func TestStream(t *testing.T) {
	f := newFixture(t)
	tokens := f.tokens()
	viewer := f.dial("/api/v1/ws", tokens[auth.Viewer])
	hello := readFrame(t, viewer)
	if hello["event"] != "connected" || hello["organism"] != "hello-world" || len(hello["agents"].([]any)) != 10 {
		t.Fatalf("connected: %v", hello)
	}
	writeFrame(t, viewer, frame{"cmd": "subscribe", "agents": []string{"shouter"},
		"events": []string{"message", "thread_created", "thread_updated"}})
	if got := readSubscribed(t, viewer); got["event"] != "subscribed" {
		t.Fatalf("subscribe: %v", got)
	}
	writeFrame(t, viewer, frame{"cmd": "inject", "to": "greeter", "payload": map[string]string{"name": "Vi"}})
	if got := readFrame(t, viewer); got["event"] != "error" || got["error"] != "Forbidden" {
		t.Fatalf("viewer inject: %v", got)
	}

	operator := f.dial("/api/v1/ws", tokens[auth.Operator])
	readFrame(t, operator)
	writeFrame(t, operator, frame{"cmd": "subscribe", "events": []string{"injected"}})
	if got := readSubscribed(t, operator); got["event"] != "subscribed" {
		t.Fatalf("operator subscribe: %v", got)
	}
	writeFrame(t, operator, frame{"cmd": "inject", "to": "greeter", "payload": map[string]string{"name": "Op"}})
	injected := readFrame(t, operator)
	conv, _ := injected["thread_id"].(string)
	if injected["event"] != "injected" || conv == "" || len(injected["message_id"].(string)) != 64 {
		t.Fatalf("inject: %v", injected)
	}

	// The viewer sees the messages shouter sends or receives (the agent
	// filter), then the conversation's completion (which names no agent, so
	// it passes only without an agent filter: it must not arrive).
	var seen []string
	for len(seen) < 2 {
		ev := readFrame(t, viewer)
		if ev["event"] != "message" {
			t.Fatalf("event %v", ev)
		}
		m := ev["message"].(map[string]any)
		if m["conversation"] != conv {
			continue
		}
		if m["from"] != "shouter" && m["listener"] != "shouter" {
			t.Errorf("agent filter let %v through", m)
		}
		seen = append(seen, m["payload_type"].(string))
	}
	if seen[0] != "GreetingResponse" || seen[1] != "ShoutedResponse" {
		t.Errorf("messages %v", seen)
	}

	// Subscribed to the conversation without an agent filter, the viewer
	// may now also see its completion, if the pump had not finished it yet:
	// it can arrive anywhere among the answers to the next two commands.
	writeFrame(t, viewer, frame{"cmd": "subscribe", "threads": []string{conv}})
	writeFrame(t, viewer, frame{"cmd": "dance"})
	var answers []any
	for len(answers) < 2 {
		got := readFrame(t, viewer)
		if got["event"] == "thread_updated" && got["thread_id"] == conv && got["status"] == "completed" {
			continue
		}
		answers = append(answers, got["event"])
		if got["event"] == "error" && got["error"] != "Unknown command: dance" {
			t.Errorf("unknown command: %v", got)
		}
	}
	if diff := cmp.Diff([]any{"subscribed", "error"}, answers); diff != "" {
		t.Errorf("answers to subscribe and an unknown command (-want +got):\n%s", diff)
	}
}

// readSubscribed reads the answer to a subscribe command on c. The
// agent_state events the stream sent before the subscription took effect
// (every event is subscribed until then) may come first: they are skipped.
func readSubscribed(t *testing.T, c *websocket.Conn) frame {
	t.Helper()
	for {
		if got := readFrame(t, c); got["event"] != "agent_state" {
			return got
		}
	}
}
