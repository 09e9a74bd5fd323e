package llm

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/config"
)

// seen is one request a fake provider received.
type seen struct {
	Path   string
	Header http.Header
	Body   map[string]any
}

// fakeProvider is a loopback HTTP server speaking a provider's protocol
// through reply; it records every request.
type fakeProvider struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []seen
}

func newFake(t *testing.T, reply http.HandlerFunc) *fakeProvider {
	t.Helper()
	f := &fakeProvider{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		if err := json.Unmarshal(b, &body); err != nil {
			t.Errorf("request body is not JSON: %v: %s", err, b)
		}
		f.mu.Lock()
		f.reqs = append(f.reqs, seen{Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
		f.mu.Unlock()
		reply(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeProvider) requests() []seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seen(nil), f.reqs...)
}

// backendFor builds a backend of provider p pointing at f.
func backendFor(t *testing.T, p config.Provider, name string, f *fakeProvider, edit ...func(*config.Backend)) *Backend {
	t.Helper()
	c := config.Backend{Provider: p, Name: name, BaseURL: f.URL, Priority: 1, RateLimitTPM: 100000, MaxConcurrent: 4,
		Timeout: config.Duration(5 * time.Second)}
	for _, e := range edit {
		e(&c)
	}
	b, err := NewBackend(c, "sk-test", f.Client())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sleeps records the router's backoff delays instead of sleeping.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(_ context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d = append(s.d, d)
	return nil
}

func (s *sleeps) all() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// okReply answers any provider's protocol with text.
func okReply(p config.Provider, text string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		switch p {
		case config.Anthropic:
			writeJSON(w, map[string]any{"model": "claude-x", "content": []any{map[string]any{"type": "text", "text": text}},
				"stop_reason": "end_turn", "usage": map[string]any{"input_tokens": 11, "output_tokens": 7}})
		case config.Ollama:
			writeJSON(w, map[string]any{"model": "llama3.2", "message": map[string]any{"role": "assistant", "content": text},
				"done": true, "prompt_eval_count": 11, "eval_count": 7})
		default:
			writeJSON(w, map[string]any{"model": "m", "choices": []any{map[string]any{
				"message": map[string]any{"role": "assistant", "content": text}, "finish_reason": "stop"}},
				"usage": map[string]any{"prompt_tokens": 11, "completion_tokens": 7}})
		}
	}
}

func temp(v float64) *float64 { return &v }
