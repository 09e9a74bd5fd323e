// Package llmtest is a loopback chat model for tests of code that drives
// the organism's agents: an HTTP server speaking the OpenAI-style
// chat-completions protocol (streamed as server-sent events, or one JSON
// answer), answering each request with the chunks a test chooses and
// recording what it was asked. A stream is shaped as OpenAI's are: a first
// chunk with the role, text in pieces, each tool call announced by its
// index, id and name with empty arguments and its arguments following in
// pieces keyed by the index alone, finish_reason, then a chunk with no
// choices and the usage, then [DONE].
package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// Message is one message of a chat request.
type Message struct {
	Role, Content string
	// ToolCalls are an assistant message's calls.
	ToolCalls []Call `json:"tool_calls"`
	// ToolCallID binds a tool message to the call it answers.
	ToolCallID string `json:"tool_call_id"`
}

// Call is a tool call of an assistant message of a request.
type Call struct {
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// ChatModel is a loopback OpenAI-style chat-completions server at URL (its
// base_url; requests go to URL + "/chat/completions"). The n-th request
// (from 0) is answered with the chunks reply(n) returns, streamed as
// server-sent events when the request asks for a stream. With Hold set
// (before the first request) the server closes First once the first text
// chunk of its first reply (a text reply) is sent and waits for Hold to
// close before sending the rest, so a test sees text arrive before the
// model has finished.
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
// JSON arguments args, as call id: a reply with such chunks calls those
// functions, in order (finish_reason tool_calls), with the text of its
// other chunks, if any, as the text the model wrote before its calls.
func ToolCall(id, name, args string) string {
	b, _ := json.Marshal(call{ID: id, Name: name, Args: args})
	return callPrefix + string(b)
}

// call is a ToolCall chunk's content.
type call struct {
	ID, Name, Args string
}

// split returns a reply's text chunks and its calls.
func split(chunks []string) (text []string, calls []call) {
	for _, c := range chunks {
		rest, found := strings.CutPrefix(c, callPrefix)
		if !found {
			text = append(text, c)
			continue
		}
		var tc call
		_ = json.Unmarshal([]byte(rest), &tc)
		calls = append(calls, tc)
	}
	return text, calls
}

// argPieces cuts a call's arguments in pieces of about 8 bytes, whole
// characters each, as a stream carries them ("" when there are none).
func argPieces(args string) []string {
	var out []string
	for len(args) > 8 {
		i := 8
		for i > 1 && !utf8.RuneStart(args[i]) {
			i--
		}
		out = append(out, args[:i])
		args = args[i:]
	}
	return append(out, args)
}

// usage is the token count every answer reports.
const usage = `"usage":{"prompt_tokens":11,"completion_tokens":7}`

// jsonString is s as a JSON string.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

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
	text, calls := split(m.reply(n))
	finish := "stop"
	if len(calls) > 0 {
		finish = "tool_calls"
	}
	if !body.Stream {
		content := "null"
		if len(text) > 0 || len(calls) == 0 {
			content = jsonString(strings.Join(text, ""))
		}
		toolCalls := ""
		if len(calls) > 0 {
			var parts []string
			for _, c := range calls {
				parts = append(parts, fmt.Sprintf(`{"id":%s,"type":"function","function":{"name":%s,"arguments":%s}}`,
					jsonString(c.ID), jsonString(c.Name), jsonString(c.Args)))
			}
			toolCalls = `,"tool_calls":[` + strings.Join(parts, ",") + `]`
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"model":"test-model","choices":[{"index":0,"message":{"role":"assistant","content":%s%s},"finish_reason":%q}],%s}`,
			content, toolCalls, finish, usage)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(delta string) {
		fmt.Fprintf(w, "data: {\"model\":\"test-model\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":null}]}\n\n", delta)
		w.(http.Flusher).Flush()
	}
	chunk(`{"role":"assistant","content":""}`)
	for i, c := range text {
		chunk(`{"content":` + jsonString(c) + `}`)
		if i == 0 && n == 0 && m.Hold != nil && len(calls) == 0 { // only the first reply is held, when text
			close(m.First)
			select {
			case <-m.Hold:
			case <-r.Context().Done():
				return
			}
		}
	}
	for i, c := range calls {
		chunk(fmt.Sprintf(`{"tool_calls":[{"index":%d,"id":%s,"type":"function","function":{"name":%s,"arguments":""}}]}`,
			i, jsonString(c.ID), jsonString(c.Name)))
		for _, p := range argPieces(c.Args) {
			chunk(fmt.Sprintf(`{"tool_calls":[{"index":%d,"function":{"arguments":%s}}]}`, i, jsonString(p)))
		}
	}
	fmt.Fprintf(w, "data: {\"model\":\"test-model\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":%q}]}\n\n", finish)
	fmt.Fprintf(w, "data: {\"model\":\"test-model\",\"choices\":[],%s}\n\ndata: [DONE]\n\n", usage)
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
