package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/config"
)

var testMessages = []Message{
	{Role: System, Content: "constitution"},
	{Role: System, Content: "prompt"},
	{Role: User, Content: "[From console]\nhi"},
	{Role: Assistant, Content: "hello"},
	{Role: User, Content: "again"},
}

func TestProviderRequestOnTheWire(t *testing.T) {
	tests := []struct {
		provider config.Provider
		path     string
		auth     [2]string
		check    func(t *testing.T, body map[string]any)
	}{
		{config.OpenAI, "/chat/completions", [2]string{"Authorization", "Bearer sk-test"}, checkChatCompletions},
		{config.XAI, "/chat/completions", [2]string{"Authorization", "Bearer sk-test"}, checkChatCompletions},
		{config.Anthropic, "/messages", [2]string{"X-Api-Key", "sk-test"}, func(t *testing.T, body map[string]any) {
			if body["system"] != "constitution\n\nprompt" {
				t.Errorf("system = %q, want every system message joined in order", body["system"])
			}
			want := []any{
				map[string]any{"role": "user", "content": "[From console]\nhi"},
				map[string]any{"role": "assistant", "content": "hello"},
				map[string]any{"role": "user", "content": "again"},
			}
			if !reflect.DeepEqual(body["messages"], want) {
				t.Errorf("messages = %v", body["messages"])
			}
			if body["max_tokens"] != 256.0 || body["temperature"] != 0.25 {
				t.Errorf("max_tokens/temperature = %v/%v", body["max_tokens"], body["temperature"])
			}
		}},
		{config.Ollama, "/api/chat", [2]string{"Authorization", ""}, func(t *testing.T, body map[string]any) {
			checkMessages(t, body["messages"])
			if body["stream"] != false {
				t.Errorf("stream = %v, want false", body["stream"])
			}
			opts, _ := body["options"].(map[string]any)
			if opts["num_predict"] != 256.0 || opts["temperature"] != 0.25 {
				t.Errorf("options = %v", opts)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(string(tc.provider), func(t *testing.T) {
			f := newFake(t, okReply(tc.provider, "the answer"))
			b := backendFor(t, tc.provider, "b", f)
			rep, err := b.do(context.Background(), Request{Model: "model-x", Messages: testMessages, MaxTokens: 256,
				Temperature: temp(0.25)})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Content != "the answer" || rep.Usage != (Usage{PromptTokens: 11, CompletionTokens: 7, Requests: 1}) {
				t.Errorf("reply = %+v", rep)
			}
			reqs := f.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests", len(reqs))
			}
			r := reqs[0]
			if r.Path != tc.path {
				t.Errorf("path = %s, want %s", r.Path, tc.path)
			}
			if got := r.Header.Get(tc.auth[0]); got != tc.auth[1] {
				t.Errorf("%s = %q, want %q", tc.auth[0], got, tc.auth[1])
			}
			if tc.provider == config.Anthropic && r.Header.Get("Anthropic-Version") != anthropicVersion {
				t.Errorf("anthropic-version = %q", r.Header.Get("Anthropic-Version"))
			}
			if r.Body["model"] != "model-x" {
				t.Errorf("model = %v", r.Body["model"])
			}
			tc.check(t, r.Body)
		})
	}
}

func checkChatCompletions(t *testing.T, body map[string]any) {
	t.Helper()
	checkMessages(t, body["messages"])
	if body["max_tokens"] != 256.0 || body["temperature"] != 0.25 {
		t.Errorf("max_tokens/temperature = %v/%v", body["max_tokens"], body["temperature"])
	}
	if _, ok := body["stream"]; ok {
		t.Errorf("stream = %v, want absent", body["stream"])
	}
}

func checkMessages(t *testing.T, got any) {
	t.Helper()
	var want []any
	for _, m := range testMessages {
		want = append(want, map[string]any{"role": string(m.Role), "content": m.Content})
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("messages = %v\nwant %v", got, want)
	}
}

func TestAnthropicDefaultMaxTokens(t *testing.T) {
	f := newFake(t, okReply(config.Anthropic, "x"))
	if _, err := backendFor(t, config.Anthropic, "a", f).do(context.Background(), Request{Messages: testMessages}); err != nil {
		t.Fatal(err)
	}
	body := f.requests()[0].Body
	if body["max_tokens"] != float64(anthropicDefaultMaxTokens) || body["model"] != DefaultModels[config.Anthropic] {
		t.Errorf("max_tokens = %v, model = %v", body["max_tokens"], body["model"])
	}
	if _, ok := body["temperature"]; ok {
		t.Error("temperature sent although unset")
	}
}

func TestProviderStreaming(t *testing.T) {
	sse := func(events ...string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, e := range events {
				fmt.Fprintf(w, "%s\n\n", e)
				w.(http.Flusher).Flush()
			}
		}
	}
	tests := []struct {
		provider config.Provider
		reply    http.HandlerFunc
		usage    Usage
	}{
		{config.OpenAI, sse(
			`data: {"model":"gpt-x","choices":[{"delta":{"role":"assistant","content":"Hel"}}]}`,
			`data: {"choices":[{"delta":{"content":"lo"},"finish_reason":"stop"}]}`,
			`data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2}}`,
			`data: [DONE]`), Usage{5, 2, 1}},
		{config.Anthropic, sse(
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-x\",\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}",
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"Hel\"}}",
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"lo\"}}",
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}",
			"event: message_stop\ndata: {\"type\":\"message_stop\"}"), Usage{5, 2, 1}},
		{config.Ollama, func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintln(w, `{"model":"llama","message":{"role":"assistant","content":"Hel"},"done":false}`)
			w.(http.Flusher).Flush()
			fmt.Fprintln(w, `{"model":"llama","message":{"role":"assistant","content":"lo"},"done":false}`)
			fmt.Fprintln(w, `{"model":"llama","message":{"role":"assistant","content":""},"done":true,"prompt_eval_count":5,"eval_count":2}`)
		}, Usage{5, 2, 1}},
	}
	for _, tc := range tests {
		t.Run(string(tc.provider), func(t *testing.T) {
			f := newFake(t, tc.reply)
			var deltas []string
			rep, err := backendFor(t, tc.provider, "b", f).do(context.Background(), Request{Messages: testMessages,
				OnDelta: func(d Delta) { deltas = append(deltas, d.Text) }})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Content != "Hello" || strings.Join(deltas, "|") != "Hel|lo" || rep.Usage != tc.usage {
				t.Errorf("reply %+v, deltas %q", rep, deltas)
			}
			if f.requests()[0].Body["stream"] != true {
				t.Errorf("stream flag = %v", f.requests()[0].Body["stream"])
			}
		})
	}
}

func TestProviderErrors(t *testing.T) {
	status := func(code int, hdr ...string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			for i := 0; i+1 < len(hdr); i += 2 {
				w.Header().Set(hdr[i], hdr[i+1])
			}
			w.WriteHeader(code)
			fmt.Fprint(w, `{"error":"nope"}`)
		}
	}
	tests := []struct {
		name  string
		reply http.HandlerFunc
		want  error
		after time.Duration
	}{
		{"401", status(401), ErrAuth, 0},
		{"400", status(400), ErrRequest, 0},
		{"429 retry-after", status(429, "Retry-After", "7"), ErrRateLimited, 7 * time.Second},
		{"500", status(500), ErrServer, 0},
		{"malformed", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"choices": [`) }, ErrMalformed, 0},
		{"no choices", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"choices": []}`) }, ErrMalformed, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, tc.reply)
			_, err := backendFor(t, config.OpenAI, "b", f).do(context.Background(), Request{Messages: testMessages})
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			var se *StatusError
			if errors.As(err, &se) && se.RetryAfter != tc.after {
				t.Errorf("RetryAfter = %v, want %v", se.RetryAfter, tc.after)
			}
		})
	}
}

func TestProviderTimeout(t *testing.T) {
	release := make(chan struct{})
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	b := backendFor(t, config.OpenAI, "b", f, func(c *config.Backend) { c.Timeout = config.Duration(50 * time.Millisecond) })
	_, err := b.do(context.Background(), Request{Messages: testMessages})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a deadline error", err)
	}
	if b.active.Load() != 0 || len(b.sem) != 0 {
		t.Error("the timed-out request still holds the backend")
	}
}

func TestRetryAfterHeader(t *testing.T) {
	future := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	tests := []struct {
		in     string
		lo, hi time.Duration
	}{
		{"", 0, 0},
		{"3", 3 * time.Second, 3 * time.Second},
		{"0.5", 500 * time.Millisecond, 500 * time.Millisecond},
		{"-1", 0, 0},
		{"soon", 0, 0},
		{future, 80 * time.Second, 90 * time.Second},
		{"Mon, 02 Jan 2006 15:04:05 GMT", 0, 0}, // in the past
	}
	for _, tc := range tests {
		if got := retryAfter(tc.in); got < tc.lo || got > tc.hi {
			t.Errorf("retryAfter(%q) = %v, want in [%v, %v]", tc.in, got, tc.lo, tc.hi)
		}
	}
}
