package route

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/llm"
	"github.com/xml-pipeline/xmlpipe/listeners/llm/config"
)

// chatServer is a loopback OpenAI chat-completions server answering each
// model with a fixed content, recording the requests.
type chatServer struct {
	*httptest.Server
	mu      sync.Mutex
	reqs    []map[string]any
	answers map[string]string // model → content ("" → HTTP 500)
}

func newChatServer(t *testing.T, answers map[string]string) *chatServer {
	t.Helper()
	s := &chatServer{answers: answers}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		if err := json.Unmarshal(b, &body); err != nil || r.URL.Path != "/chat/completions" {
			t.Errorf("request %s: %s (%v)", r.URL.Path, b, err)
		}
		s.mu.Lock()
		s.reqs = append(s.reqs, body)
		s.mu.Unlock()
		model, _ := body["model"].(string)
		content, ok := s.answers[model]
		if !ok || content == "" {
			http.Error(w, `{"error":{"message":"boom"}}`, http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"model": model, "choices": []any{map[string]any{
			"message": map[string]any{"role": "assistant", "content": content}, "finish_reason": "stop"}},
			"usage": map[string]any{"prompt_tokens": 11, "completion_tokens": 7}})
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *chatServer) requests() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.reqs...)
}

// routerFor is a real llm.Router with one openai backend on s, no retries.
func routerFor(t *testing.T, s *chatServer) *llm.Router {
	t.Helper()
	b, err := llm.NewBackend(config.Backend{Provider: config.OpenAI, Name: "loop", BaseURL: s.URL, Priority: 1,
		RateLimitTPM: 1000000, MaxConcurrent: 4, Timeout: config.Duration(10 * time.Second)}, "", s.Client())
	if err != nil {
		t.Fatal(err)
	}
	r := llm.NewRouter(llm.RouterConfig{Backends: []*llm.Backend{b}, Retries: 0})
	t.Cleanup(r.Close)
	return r
}

// The ladder asks the cheap model first; its answer fails validation (a
// number where the schema wants a string), so the strong model is asked,
// told why, and its answer is the payload.
func TestLadderEscalates(t *testing.T) {
	s := newChatServer(t, map[string]string{
		"cheap":  `{"Expression": 42}`,
		"strong": `{"Expression": "6*7"}`,
	})
	l := Ladder{LLM: routerFor(t, s), Models: []string{"cheap", "strong"}}
	f, err := l.Fill(context.Background(), "I need to multiply six by seven", capNamed(t, "calculate"))
	if err != nil {
		t.Fatal(err)
	}
	if string(f.Payload) != `<Calculate xmlns=""><Expression>6*7</Expression></Calculate>` || f.By != "strong" {
		t.Fatalf("filled %s by %s", f.Payload, f.By)
	}
	if len(f.Attempts) != 2 || f.Attempts[0].By != "cheap" || f.Attempts[0].Err == nil || f.Attempts[1].Err != nil {
		t.Fatalf("attempts: %+v", f.Attempts)
	}
	reqs := s.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	rf, _ := reqs[0]["response_format"].(map[string]any)
	js, _ := rf["json_schema"].(map[string]any)
	schema, _ := js["schema"].(map[string]any)
	if rf["type"] != "json_schema" || js["name"] != "calculate" || schema["type"] != "object" {
		t.Fatalf("structured output not asked for: %v", reqs[0]["response_format"])
	}
	msgs, _ := reqs[1]["messages"].([]any)
	last, _ := msgs[len(msgs)-1].(map[string]any)
	if content, _ := last["content"].(string); !strings.Contains(content, "does not fit the schema") || !strings.Contains(content, "Expression") {
		t.Fatalf("the strong model was not told why: %v", last)
	}
}

// Every model failing — a reply that is not the payload, a backend error —
// is a FillError listing each attempt.
func TestLadderFails(t *testing.T) {
	s := newChatServer(t, map[string]string{
		"cheap": `{"Expression": "6*7", "Extra": 1}`,
		// "strong" answers HTTP 500
	})
	l := Ladder{LLM: routerFor(t, s), Models: []string{"cheap", "strong"}}
	_, err := l.Fill(context.Background(), "multiply six by seven", capNamed(t, "calculate"))
	var fe *FillError
	if !errors.As(err, &fe) || !errors.Is(err, ErrFill) || len(fe.Attempts) != 2 {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(err.Error(), "cheap:") || !strings.Contains(err.Error(), "strong:") || !strings.Contains(err.Error(), "Extra") {
		t.Fatalf("error does not name both attempts: %v", err)
	}
	// A schema violation the JSON form cannot express: an enum value.
	s2 := newChatServer(t, map[string]string{"m": `{"Op": "erase", "Path": "notes/a.txt"}`})
	_, err = Ladder{LLM: routerFor(t, s2), Models: []string{"m"}}.Fill(context.Background(), "erase notes/a.txt", capNamed(t, "files"))
	if !errors.Is(err, ErrFill) {
		t.Fatalf("an answer outside the enum passed: %v", err)
	}
	if _, err := (Ladder{}).Fill(context.Background(), "x", capNamed(t, "calculate")); !errors.Is(err, ErrFill) {
		t.Fatalf("a ladder without models: %v", err)
	}
}

func TestOutputName(t *testing.T) {
	for in, want := range map[string]string{"calculate": "calculate", "weather.forecast": "weather_forecast",
		"": "response", strings.Repeat("x", 80): strings.Repeat("x", 64)} {
		if got := outputName(in); got != want {
			t.Errorf("outputName(%q) = %q, want %q", in, got, want)
		}
	}
}
