package bus

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// chatMessage is one message of a chat request.
type chatMessage struct {
	Role, Content string
}

// chatModel is a loopback OpenAI-style chat-completions server. The n-th
// request (from 0) gets the chunks reply(n) returns, streamed as
// server-sent events when the request asks for a stream (it always does
// for an agent whose organism streams). With hold set the server waits for
// it after the first chunk of its first reply, once first is closed.
type chatModel struct {
	*httptest.Server
	reply func(n int) []string
	hold  chan struct{}
	first chan struct{}

	mu       sync.Mutex
	requests [][]chatMessage
}

func newChatModel(t *testing.T, reply func(n int) []string) *chatModel {
	m := &chatModel{reply: reply, first: make(chan struct{})}
	m.Server = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.Close)
	return m
}

func (m *chatModel) serve(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Messages []chatMessage
		Stream   bool
	}
	if r.URL.Path != "/chat/completions" || json.NewDecoder(r.Body).Decode(&body) != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	n := len(m.requests)
	m.requests = append(m.requests, body.Messages)
	m.mu.Unlock()
	chunks := m.reply(n)
	usage := `"usage":{"prompt_tokens":11,"completion_tokens":7}`
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
		if i == 0 && n == 0 && m.hold != nil { // only the first reply is held
			close(m.first)
			select {
			case <-m.hold:
			case <-r.Context().Done():
				return
			}
		}
	}
	fmt.Fprintf(w, "data: {\"model\":\"test-model\",\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
	fmt.Fprintf(w, "data: {\"choices\":[],%s}\n\ndata: [DONE]\n\n", usage)
}

// request returns the n-th request's messages (from 0).
func (m *chatModel) request(t *testing.T, n int) []chatMessage {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if n >= len(m.requests) {
		t.Fatalf("the model got %d requests, want more than %d", len(m.requests), n)
	}
	return m.requests[n]
}

// count is how many requests the model got.
func (m *chatModel) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.requests)
}

// hasMessage reports whether msgs holds a message of role whose content
// contains text.
func hasMessage(msgs []chatMessage, role, text string) bool {
	for _, m := range msgs {
		if m.Role == role && strings.Contains(m.Content, text) {
			return true
		}
	}
	return false
}

// agentOrganism builds an organism whose agent poet talks to the model at
// url (and keeps the hello-world greeter, shouter and response-handler).
func agentOrganism(url string) buildFunc {
	return func(o organism.Options) (*organism.Organism, error) {
		cfg, err := config.Parse("organism.yaml", []byte(`organism: {name: chat}
llm:
  retries: 0
  backends:
    - provider: openai
      name: local
      base_url: `+url+`
      model: test-model
listeners:
  - name: poet
    agent: true
    description: Writes short poems
    prompt: You are poet.
`))
		if err != nil {
			return nil, err
		}
		return organism.New(cfg, o)
	}
}
