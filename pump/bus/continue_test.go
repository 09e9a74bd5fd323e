package bus

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/llmtest"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// answerChunks answers the n-th request (from 0) "answer <n+1>" in three
// pieces.
func answerChunks(n int) []string { return []string{"ans", "wer ", fmt.Sprint(n + 1)} }

// sendOn sends text to poet on /ws (on thread when set) and returns the
// "sent" frame's conversation and every frame of the conversation up to
// its completion.
func sendOn(t *testing.T, c *websocket.Conn, thread, text string) (string, []frame) {
	t.Helper()
	req := frame{"type": "send", "target": "poet", "content": text, "id": text}
	if thread != "" {
		req["thread_id"] = thread
	}
	writeFrame(t, c, req)
	sent := readFrame(t, c)
	conv, _ := sent["thread_id"].(string)
	if sent["type"] != "sent" || sent["id"] != text || !stage.IsThreadID(conv) {
		t.Fatalf("%v: got %v, want sent", req, sent)
	}
	return conv, conversation(t, c, conv)
}

// TestWSDeltasThenAnswer: an agent's streamed text reaches the /ws client
// as delta frames, in order, the last marked end, before the reply frame
// that carries the answer whole (the journaled message); nothing else
// arrives out of place.
func TestWSDeltasThenAnswer(t *testing.T) {
	m := llmtest.NewChatModel(t, answerChunks)
	f := newFixtureWith(t, agentOrganism(m.URL))
	ws := f.dial("/ws", f.loginAs("alice", auth.Operator))
	readFrame(t, ws) // connected
	conv, frames := sendOn(t, ws, "", "first")
	var text strings.Builder
	replyAt, endAt := -1, -1
	for i, fr := range frames {
		switch fr["type"] {
		case "delta":
			if replyAt >= 0 {
				t.Errorf("a delta after the reply: %v", frames)
			}
			if fr["agent"] != "poet" || fr["thread_id"] != conv {
				t.Errorf("delta %v", fr)
			}
			if _, ok := fr["message_id"]; ok {
				t.Errorf("a delta carries a message_id: %v", fr)
			}
			text.WriteString(fr["text"].(string))
			if fr["end"] == true {
				endAt = i
			}
		case "reply":
			replyAt = i
			if fr["text"] != "answer 1" || fr["from"] != "poet" {
				t.Errorf("reply %v", fr)
			}
		}
	}
	if text.String() != "answer 1" || endAt < 0 || replyAt < endAt {
		t.Errorf("deltas %q (end at %d, reply at %d), want \"answer 1\" ended before the reply:\n%v", text.String(),
			endAt, replyAt, frames)
	}

	// The call is listed with its tokens and timing, linked to the answer.
	token := f.loginAs("vic", auth.Viewer)
	var calls []any
	pollFor(t, "the call's link to its envelope", func() bool {
		status, body, _ := f.do("GET", "/api/v1/usage/calls?thread="+conv+"&limit=5", token, nil)
		if status != http.StatusOK {
			t.Fatalf("calls: %d %v", status, body)
		}
		calls, _ = body["calls"].([]any)
		return len(calls) == 1 && calls[0].(map[string]any)["envelope_seq"] != nil
	})
	c := calls[0].(map[string]any)
	if c["agent"] != "poet" || c["backend"] != "local" || c["model"] != "test-model" || c["prompt_tokens"] != 11.0 ||
		c["completion_tokens"] != 7.0 || c["conversation"] != conv || c["streamed"] != true || c["finish_reason"] != "stop" ||
		c["duration_ms"].(float64) <= 0 || c["first_token_ms"].(float64) <= 0 {
		t.Errorf("call %v", c)
	}
	status, body, _ := f.do("GET", "/api/v1/messages?thread="+conv, token, nil)
	found := false
	for _, x := range body["messages"].([]any) {
		msg := x.(map[string]any)
		found = found || msg["seq"] == c["envelope_seq"] && msg["from"] == "poet"
	}
	if status != http.StatusOK || !found {
		t.Errorf("the call's envelope_seq %v names no message of poet's: %v", c["envelope_seq"], body)
	}
	for _, q := range []string{"?thread=nope", "?limit=0", "?limit=x"} {
		if status, _, _ := f.do("GET", "/api/v1/usage/calls"+q, token, nil); status != http.StatusBadRequest {
			t.Errorf("GET /api/v1/usage/calls%s: %d, want 400", q, status)
		}
	}

	// /ws usage answers the totals and the newest calls.
	writeFrame(t, ws, frame{"type": "usage", "id": 9.0})
	u := readFrame(t, ws)
	agents, _ := u["agents"].([]any)
	wcalls, _ := u["calls"].([]any)
	if u["type"] != "usage" || u["id"] != 9.0 || u["llm"] != true || len(agents) != 1 || len(wcalls) != 1 ||
		agents[0].(map[string]any)["prompt_tokens"] != 11.0 || wcalls[0].(map[string]any)["id"] != c["id"] {
		t.Errorf("usage frame %v", u)
	}
}

// TestContinueOverWSAndREST: a /ws send and a REST inject naming the user's
// own conversation continue it — the model's next request holds the earlier
// exchanges — whether the conversation ended or not; another user naming it
// is refused over both, and hears nothing of it.
func TestContinueOverWSAndREST(t *testing.T) {
	m := llmtest.NewChatModel(t, answerChunks)
	f := newFixtureWith(t, agentOrganism(m.URL))
	alice := f.loginAs("alice", auth.Operator)
	bob := f.loginAs("bob", auth.Operator)
	ca := f.dial("/ws", alice)
	readFrame(t, ca)
	cb := f.dial("/ws", bob)
	readFrame(t, cb)

	conv, _ := sendOn(t, ca, "", "first")
	again, _ := sendOn(t, ca, conv, "second")
	if again != conv {
		t.Fatalf("the continuation travelled on %s, want %s", again, conv)
	}
	if msgs := m.Request(t, 1); !llmtest.Has(msgs, "user", "first") || !llmtest.Has(msgs, "assistant", "answer 1") {
		t.Errorf("the continued request lacks the first exchange: %+v", msgs)
	}

	// Bob names alice's conversation: refused on /ws and over REST.
	writeFrame(t, cb, frame{"type": "send", "target": "poet", "content": "mine?", "thread_id": conv, "id": 1.0})
	if fr := readFrame(t, cb); fr["type"] != "error" || fr["code"] != "rejected" || fr["error"] != "Invalid envelope" {
		t.Errorf("bob's /ws continuation: %v", fr)
	}
	status, body, _ := f.do("POST", "/api/v1/inject", bob, map[string]any{"to": "poet", "payload": map[string]string{
		"text": "mine?"}, "thread_id": conv})
	if status != http.StatusUnprocessableEntity {
		t.Errorf("bob's REST continuation: %d %v", status, body)
	}

	// Alice continues over REST, on the same conversation.
	status, body, _ = f.do("POST", "/api/v1/inject", alice, map[string]any{"to": "poet", "payload": map[string]string{
		"text": "third"}, "thread_id": conv})
	if status != http.StatusOK || body["thread_id"] != conv {
		t.Fatalf("alice's REST continuation: %d %v", status, body)
	}
	pollFor(t, "the answer to the REST continuation", func() bool {
		_, body, _ := f.do("GET", "/api/v1/threads/"+conv+"/messages?scope=conversation", alice, nil)
		list, _ := body["messages"].([]any)
		for _, x := range list {
			if msg := x.(map[string]any); msg["from"] == "poet" && strings.Contains(msg["payload"].(string), "answer 3") {
				return true
			}
		}
		return false
	})
	msgs := m.Request(t, 2)
	for _, want := range []string{"first", "second", "third"} {
		if !llmtest.Has(msgs, "user", want) {
			t.Errorf("the third request lacks %q: %+v", want, msgs)
		}
	}
	if m.Count() != 3 {
		t.Errorf("the model got %d requests, want 3 (bob's were refused)", m.Count())
	}
	// Bob's socket heard nothing of alice's conversation.
	writeFrame(t, cb, frame{"type": "ping"})
	if fr := readFrame(t, cb); fr["type"] != "pong" {
		t.Errorf("bob's socket got %v", fr)
	}
}
