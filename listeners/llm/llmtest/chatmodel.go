// Package llmtest is a loopback chat model for tests of code that drives
// the organism's agents: an HTTP server speaking the OpenAI-style
// chat-completions protocol (streamed as server-sent events, or one JSON
// answer), answering each request with the chunks a test chooses and
// recording what it was asked.
package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Message is one message of a chat request.
type Message struct {
	Role, Content string
}

// ChatModel is a loopback OpenAI-style chat-completions server at URL (its
// base_url; requests go to URL + "/chat/completions"). The n-th request
// (from 0) is answered with the chunks reply(n) returns, streamed as
// server-sent events when the request asks for a stream. With Hold set
// (before the first request) the server closes First once the first chunk
// of its first reply is sent and waits for Hold to close before sending
// the rest, so a test sees text arrive before the model has finished.
type ChatModel struct {
	*httptest.Server
	// Hold, when set, holds the first reply after its first chunk until
	// it is closed.
	Hold chan struct{}
	// First is closed once the first chunk of a held reply is sent.
	First chan struct{}

	reply    func(n int) []string
	mu       sync.Mutex
	requests [][]Message
	streamed []bool
}

// NewChatModel starts a ChatModel answering with reply; it is closed when
// the test ends.
func NewChatModel(t testing.TB, reply func(n int) []string) *ChatModel {
	m := &ChatModel{reply: reply, First: make(chan struct{})}
	m.Server = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.Close)
	return m
}

// callPrefix begins a chunk that is a tool call (see ToolCall).
const callPrefix = "\x00llmtest.call:"

// ToolCall is a chunk of a reply that calls the function name with the
// JSON arguments args, as call id: a reply whose chunks end with such
// chunks calls those functions (finish_reason tool_calls), with the text
// of the chunks before them, if any, as the text the model wrote beside
// its calls.
func ToolCall(id, name, args string) string {
	b, _ := json.Marshal(map[string]any{"id": id, "type": "function",
		"function": map[string]string{"name": name, "arguments": args}})
	return callPrefix + string(b)
}

// toolCalls splits a reply whose chunks end with ToolCall chunks into the
// text chunks before them and the calls, as the JSON of an OpenAI
// tool_calls array (with their indexes when indexed, as a stream's delta
// carries them); ok is false for a text reply.
func toolCalls(chunks []string, indexed bool) (text []string, calls string, ok bool) {
	first := len(chunks)
	for first > 0 && strings.HasPrefix(chunks[first-1], callPrefix) {
		first--
	}
	if first == len(chunks) {
		return chunks, "", false
	}
	var out []json.RawMessage
	for i, c := range chunks[first:] {
		rest := strings.TrimPrefix(c, callPrefix)
		if indexed {
			rest = fmt.Sprintf(`{"index":%d,%s`, i, rest[1:])
		}
		out = append(out, json.RawMessage(rest))
	}
	b, _ := json.Marshal(out)
	return chunks[:first], string(b), true
}

// usage is the token count every answer reports.
const usage = `"usage":{"prompt_tokens":11,"completion_tokens":7}`

func (m *ChatModel) serve(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Messages []Message
		Stream   bool
	}
	if r.URL.Path != "/chat/completions" || json.NewDecoder(r.Body).Decode(&body) != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	n := len(m.requests)
	m.requests = append(m.requests, body.Messages)
	m.streamed = append(m.streamed, body.Stream)
	m.mu.Unlock()
	chunks := m.reply(n)
	if text, calls, ok := toolCalls(chunks, body.Stream); ok {
		if !body.Stream {
			content := "null"
			if len(text) > 0 {
				c, _ := json.Marshal(strings.Join(text, ""))
				content = string(c)
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"model":"test-model","choices":[{"message":{"role":"assistant","content":%s,"tool_calls":%s},"finish_reason":"tool_calls"}],%s}`,
				content, calls, usage)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range text {
			fmt.Fprintf(w, "data: {\"model\":\"test-model\",\"choices\":[{\"delta\":{\"content\":%q}}]}\n\n", c)
		}
		fmt.Fprintf(w, "data: {\"model\":\"test-model\",\"choices\":[{\"delta\":{\"tool_calls\":%s}}]}\n\n", calls)
		fmt.Fprintf(w, "data: {\"model\":\"test-model\",\"choices\":[{\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n")
		fmt.Fprintf(w, "data: {\"choices\":[],%s}\n\ndata: [DONE]\n\n", usage)
		return
	}
	if !body.Stream {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"model":"test-model","choices":[{"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],%s}`,
			strings.Join(chunks, ""), usage)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for i, c := range chunks {
		fmt.Fprintf(w, "data: {\"model\":\"test-model\",\"choices\":[{\"delta\":{\"content\":%q}}]}\n\n", c)
		w.(http.Flusher).Flush()
		if i == 0 && n == 0 && m.Hold != nil { // only the first reply is held
			close(m.First)
			select {
			case <-m.Hold:
			case <-r.Context().Done():
				return
			}
		}
	}
	fmt.Fprintf(w, "data: {\"model\":\"test-model\",\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
	fmt.Fprintf(w, "data: {\"choices\":[],%s}\n\ndata: [DONE]\n\n", usage)
}

// Request returns the n-th request's messages (from 0); the test fails if
// the model got no more than n requests.
func (m *ChatModel) Request(t testing.TB, n int) []Message {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if n >= len(m.requests) {
		t.Fatalf("the model got %d requests, want more than %d", len(m.requests), n)
	}
	return m.requests[n]
}

// Streamed reports whether the n-th request (from 0) asked for a stream.
func (m *ChatModel) Streamed(t testing.TB, n int) bool {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if n >= len(m.streamed) {
		t.Fatalf("the model got %d requests, want more than %d", len(m.streamed), n)
	}
	return m.streamed[n]
}

// Count is how many requests the model got.
func (m *ChatModel) Count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.requests)
}

// Has reports whether msgs holds a message of role whose content contains
// text.
func Has(msgs []Message, role, text string) bool {
	for _, m := range msgs {
		if m.Role == role && strings.Contains(m.Content, text) {
			return true
		}
	}
	return false
}
