package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/config"
)

// The wire tests hold each provider to recorded request and reply shapes of
// its public API (testdata/<provider>/, written from the providers'
// documentation): the exact request body for a conversation with tools,
// tool calls and tool results; replies with parallel tool calls, whole and
// streamed with split arguments; and the errors a real server gives.

var testTools = []ToolSpec{
	{Name: "calculate", Description: "Evaluates an arithmetic expression", Parameters: json.RawMessage(
		`{"type":"object","properties":{"expression":{"type":"string","description":"for example 6*7"}},"required":["expression"]}`)},
	{Name: "weather_forecast", Description: "Forecast for a city", Parameters: json.RawMessage(
		`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city"]}`)},
}

// toolConversation is a conversation in which the model called two tools in
// parallel and got their results (one a failure), then the user went on.
func toolConversation() Request {
	return Request{Model: "model-x", MaxTokens: 512, Temperature: temp(0.2), Tools: testTools, ParallelToolCalls: ptr(true),
		Messages: []Message{
			{Role: System, Content: "constitution"},
			{Role: System, Content: "You are a helpful assistant."},
			{Role: User, Content: "What is 6*7, and the weather in Paris?"},
			{Role: Assistant, Content: "Let me look.", ToolCalls: []ToolCall{
				{ID: "call_1", Name: "calculate", Arguments: json.RawMessage(`{"expression":"6*7"}`)},
				{ID: "call_2", Name: "weather_forecast", Arguments: json.RawMessage(`{"city":"Paris","days":2}`)},
			}},
			{Role: Tool, ToolCallID: "call_1", ToolName: "calculate", Content: "42"},
			{Role: Tool, ToolCallID: "call_2", Content: "service unavailable", IsError: true},
			{Role: User, Content: "Try the weather again."},
		}}
}

var verdictSchema = json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"},"confidence":{"type":"number"}},"required":["answer","confidence"],"additionalProperties":false}`)

// outputRequest asks for a structured answer.
func outputRequest() Request {
	return Request{Model: "model-x", Messages: []Message{{Role: System, Content: "constitution"}, {Role: User, Content: "Is 91 prime?"}},
		Output: &OutputSchema{Name: "verdict", Description: "The answer and how sure you are", Schema: verdictSchema, Strict: true}}
}

func ptr[T any](v T) *T { return &v }

// golden reads a testdata file.
func golden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// serveFile answers with a testdata file under a content type.
func serveFile(t *testing.T, name, contentType string) http.HandlerFunc {
	b := golden(t, name)
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		_, _ = w.Write(b)
	}
}

// wireProviders are the providers under test and their testdata folder
// (xai speaks the openai protocol).
var wireProviders = []struct {
	p      config.Provider
	dir    string
	stream string // the content type of a streamed reply
	ext    string // the extension of a streamed reply file
}{
	{config.OpenAI, "openai", "text/event-stream", ".sse"},
	{config.XAI, "openai", "text/event-stream", ".sse"},
	{config.Anthropic, "anthropic", "text/event-stream", ".sse"},
	{config.Ollama, "ollama", "application/x-ndjson", ".ndjson"},
}

// replyCmp compares replies: timing ignored, arguments as JSON values,
// errors by presence.
var replyCmp = cmp.Options{
	cmpopts.IgnoreFields(Reply{}, "Duration", "FirstToken"),
	cmp.Comparer(func(a, b json.RawMessage) bool {
		var x, y any
		if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
			return string(a) == string(b)
		}
		return reflect.DeepEqual(x, y)
	}),
	cmp.Comparer(func(a, b error) bool { return (a == nil) == (b == nil) }),
}

func TestWireRequestGolden(t *testing.T) {
	tests := []struct {
		name string
		req  func() Request
		file string
	}{
		{"tools and results", toolConversation, "request_tools.json"},
		{"structured output", outputRequest, "request_output.json"},
	}
	for _, wp := range wireProviders {
		for _, tc := range tests {
			t.Run(string(wp.p)+"/"+tc.name, func(t *testing.T) {
				f := newFake(t, okReply(wp.p, "ok"))
				if _, err := backendFor(t, wp.p, "b", f).do(context.Background(), tc.req()); err != nil {
					t.Fatal(err)
				}
				var want map[string]any
				if err := json.Unmarshal(golden(t, filepath.Join(wp.dir, tc.file)), &want); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, f.requests()[0].Body); diff != "" {
					t.Errorf("request body (-golden +sent):\n%s", diff)
				}
			})
		}
	}
}

// wantToolCalls is what each provider's recorded tool-call reply holds.
func wantToolCalls(dir string) Reply {
	calc, weather := json.RawMessage(`{"expression":"6*7"}`), json.RawMessage(`{"city":"Paris","days":2}`)
	switch dir {
	case "anthropic":
		return Reply{Content: "I'll compute that and check the forecast.", Model: "claude-sonnet-4-5-20250929", Backend: "b",
			ToolCalls: []ToolCall{{ID: "toolu_01A09q90qw90lq917835lq9", Name: "calculate", Arguments: calc},
				{ID: "toolu_01CqbHu3Z9W6ZPiNv9VLY7Xk", Name: "weather_forecast", Arguments: weather}},
			FinishReason: FinishToolCalls, StopReason: "tool_use", Usage: Usage{472, 91, 1}}
	case "ollama":
		return Reply{Model: "llama3.2", Backend: "b",
			ToolCalls: []ToolCall{{ID: "(minted)", Name: "calculate", Arguments: calc},
				{ID: "(minted)", Name: "weather_forecast", Arguments: weather}},
			FinishReason: FinishToolCalls, StopReason: "stop", Usage: Usage{122, 33, 1}}
	}
	return Reply{Model: "gpt-4o-2024-08-06", Backend: "b",
		ToolCalls: []ToolCall{{ID: "call_62136354", Name: "calculate", Arguments: calc},
			{ID: "call_40606136", Name: "weather_forecast", Arguments: weather}},
		FinishReason: FinishToolCalls, StopReason: "tool_calls", Usage: Usage{82, 49, 1}}
}

// checkMinted checks ollama's minted ids (stable, distinct, call_…) and
// puts the placeholder back so the rest compares.
func checkMinted(t *testing.T, got *Reply) {
	t.Helper()
	seen := map[string]bool{}
	for i := range got.ToolCalls {
		c := &got.ToolCalls[i]
		if !strings.HasPrefix(c.ID, "call_") || len(c.ID) != 29 || seen[c.ID] {
			t.Errorf("minted id %q", c.ID)
		}
		if c.ID != mintCallID(i, c.Name, c.Arguments) {
			t.Errorf("id %q is not the stable one", c.ID)
		}
		seen[c.ID] = true
		c.ID = "(minted)"
	}
}

func TestWireToolCallReply(t *testing.T) {
	for _, wp := range wireProviders {
		t.Run(string(wp.p), func(t *testing.T) {
			f := newFake(t, serveFile(t, filepath.Join(wp.dir, "reply_tool_calls.json"), "application/json"))
			got, err := backendFor(t, wp.p, "b", f).do(context.Background(), toolConversation())
			if err != nil {
				t.Fatal(err)
			}
			if wp.dir == "ollama" {
				checkMinted(t, &got)
			}
			if diff := cmp.Diff(wantToolCalls(wp.dir), got, replyCmp); diff != "" {
				t.Errorf("reply (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWireStreamedToolCalls(t *testing.T) {
	wantDeltas := map[string][]Delta{
		// Two calls interleaved, their arguments split mid-token.
		"openai": {
			{ToolCall: &ToolCallDelta{Index: 0, ID: "call_62136354", Name: "calculate"}},
			{ToolCall: &ToolCallDelta{Index: 0, Arguments: `{"expr`}},
			{ToolCall: &ToolCallDelta{Index: 1, ID: "call_40606136", Name: "weather_forecast"}},
			{ToolCall: &ToolCallDelta{Index: 1, Arguments: `{"city":`}},
			{ToolCall: &ToolCallDelta{Index: 0, Arguments: `ession":"6*7"}`}},
			{ToolCall: &ToolCallDelta{Index: 1, Arguments: `"Paris","days":2}`}},
		},
		"anthropic": {
			{Text: "I'll compute that "},
			{Text: "and check the forecast."},
			{ToolCall: &ToolCallDelta{Index: 0, ID: "toolu_01A09q90qw90lq917835lq9", Name: "calculate"}},
			{ToolCall: &ToolCallDelta{Index: 0, Arguments: `{"expres`}},
			{ToolCall: &ToolCallDelta{Index: 0, Arguments: `sion": "6*7"}`}},
			{ToolCall: &ToolCallDelta{Index: 1, ID: "toolu_01CqbHu3Z9W6ZPiNv9VLY7Xk", Name: "weather_forecast"}},
			{ToolCall: &ToolCallDelta{Index: 1, Arguments: `{"city": "Par`}},
			{ToolCall: &ToolCallDelta{Index: 1, Arguments: `is", "days": 2}`}},
		},
		// Ollama sends each call whole.
		"ollama": {
			{ToolCall: &ToolCallDelta{Index: 0, Name: "calculate", Arguments: `{"expression":"6*7"}`}},
			{ToolCall: &ToolCallDelta{Index: 1, Name: "weather_forecast", Arguments: `{"city":"Paris","days":2}`}},
		},
	}
	for _, wp := range wireProviders {
		t.Run(string(wp.p), func(t *testing.T) {
			f := newFake(t, serveFile(t, filepath.Join(wp.dir, "stream_tool_calls"+wp.ext), wp.stream))
			var deltas []Delta
			req := toolConversation()
			req.OnDelta = func(d Delta) { deltas = append(deltas, d) }
			got, err := backendFor(t, wp.p, "b", f).do(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			body := f.requests()[0].Body
			if body["stream"] != true {
				t.Errorf("stream = %v", body["stream"])
			}
			if wp.dir == "openai" && !reflect.DeepEqual(body["stream_options"], map[string]any{"include_usage": true}) {
				t.Errorf("stream_options = %v", body["stream_options"])
			}
			if diff := cmp.Diff(wantDeltas[wp.dir], deltas); diff != "" {
				t.Errorf("deltas (-want +got):\n%s", diff)
			}
			if got.FirstToken <= 0 || got.Duration < got.FirstToken {
				t.Errorf("timing: first token %v, duration %v", got.FirstToken, got.Duration)
			}
			if wp.dir == "ollama" {
				checkMinted(t, &got)
			}
			if diff := cmp.Diff(wantToolCalls(wp.dir), got, replyCmp); diff != "" {
				t.Errorf("reply (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWireStreamedText(t *testing.T) {
	const text = "In HTML you write <b>rain</b>."
	for _, wp := range wireProviders {
		t.Run(string(wp.p), func(t *testing.T) {
			f := newFake(t, serveFile(t, filepath.Join(wp.dir, "stream_text"+wp.ext), wp.stream))
			var deltas []string
			got, err := backendFor(t, wp.p, "b", f).do(context.Background(), Request{Messages: testMessages,
				OnDelta: func(d Delta) { deltas = append(deltas, d.Text) }})
			if err != nil {
				t.Fatal(err)
			}
			if got.Content != text || strings.Join(deltas, "") != text || len(deltas) < 3 {
				t.Errorf("content %q, deltas %q", got.Content, deltas)
			}
			if got.FinishReason != FinishStop || got.Usage != (Usage{20, 9, 1}) || len(got.ToolCalls) != 0 {
				t.Errorf("reply %+v", got)
			}
		})
	}
}

func TestWireStructuredOutputReply(t *testing.T) {
	const answer = `{"answer": "No: 91 = 7 * 13", "confidence": 0.99}`
	jsonReply := map[config.Provider]http.HandlerFunc{
		config.OpenAI: func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, map[string]any{"model": "gpt-4o", "choices": []any{map[string]any{"index": 0,
				"message": map[string]any{"role": "assistant", "content": answer, "refusal": nil}, "finish_reason": "stop"}},
				"usage": map[string]any{"prompt_tokens": 30, "completion_tokens": 12}})
		},
		config.Anthropic: serveFile(t, "anthropic/reply_output.json", "application/json"),
		config.Ollama: func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, map[string]any{"model": "llama3.2", "message": map[string]any{"role": "assistant", "content": answer},
				"done_reason": "stop", "done": true, "prompt_eval_count": 30, "eval_count": 12})
		},
	}
	for p, reply := range jsonReply {
		t.Run(string(p), func(t *testing.T) {
			got, err := backendFor(t, p, "b", newFake(t, reply)).do(context.Background(), outputRequest())
			if err != nil {
				t.Fatal(err)
			}
			if !cmp.Equal(json.RawMessage(got.Content), json.RawMessage(answer), replyCmp) || len(got.ToolCalls) != 0 ||
				got.FinishReason != FinishStop {
				t.Errorf("reply %+v", got)
			}
		})
	}
	t.Run("anthropic streamed", func(t *testing.T) {
		f := newFake(t, sseEvents(
			`{"type":"message_start","message":{"model":"claude-x","usage":{"input_tokens":30,"output_tokens":1}}}`,
			`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"verdict","input":{}}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"answer\": \"No"}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"\", \"confidence\": 0.99}"}}`,
			`{"type":"content_block_stop","index":0}`,
			`{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":12}}`,
			`{"type":"message_stop"}`))
		var text strings.Builder
		req := outputRequest()
		req.OnDelta = func(d Delta) { text.WriteString(d.Text) }
		got, err := backendFor(t, config.Anthropic, "b", f).do(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		want := `{"answer": "No", "confidence": 0.99}`
		if got.Content != want || text.String() != want || len(got.ToolCalls) != 0 || got.FinishReason != FinishStop {
			t.Errorf("reply %+v, streamed %q", got, text.String())
		}
	})
}

// sseEvents answers with data events, flushed one by one.
func sseEvents(events ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			fmt.Fprintf(w, "data: %s\n\n", e)
			w.(http.Flusher).Flush()
		}
	}
}

func TestWireToolChoice(t *testing.T) {
	named, none, required := UseTool("calculate"), ToolChoice{Mode: ToolNone}, ToolChoice{Mode: ToolRequired}
	output := &OutputSchema{Schema: verdictSchema}
	tests := []struct {
		p        config.Provider
		choice   ToolChoice
		parallel *bool
		output   *OutputSchema
		want     any // tool_choice on the wire (nil: absent)
		tools    []string
		extra    map[string]any // other keys that must be on the wire
	}{
		{config.OpenAI, ToolChoice{}, nil, nil, nil, []string{"calculate", "weather_forecast"}, nil},
		{config.OpenAI, none, nil, nil, "none", []string{"calculate", "weather_forecast"}, nil},
		{config.OpenAI, required, nil, nil, "required", []string{"calculate", "weather_forecast"}, nil},
		{config.OpenAI, named, ptr(false), nil, map[string]any{"type": "function", "function": map[string]any{"name": "calculate"}},
			[]string{"calculate", "weather_forecast"}, map[string]any{"parallel_tool_calls": false}},
		{config.XAI, required, nil, output, "required", []string{"calculate", "weather_forecast"},
			map[string]any{"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{
				"name": "response", "schema": jsonAny(verdictSchema)}}}},
		{config.Anthropic, ToolChoice{}, nil, nil, nil, []string{"calculate", "weather_forecast"}, nil},
		{config.Anthropic, none, nil, nil, map[string]any{"type": "none"}, []string{"calculate", "weather_forecast"}, nil},
		{config.Anthropic, required, nil, nil, map[string]any{"type": "any"}, []string{"calculate", "weather_forecast"}, nil},
		{config.Anthropic, named, nil, nil, map[string]any{"type": "tool", "name": "calculate"}, []string{"calculate", "weather_forecast"}, nil},
		{config.Anthropic, ToolChoice{}, ptr(false), nil, map[string]any{"type": "auto", "disable_parallel_tool_use": true},
			[]string{"calculate", "weather_forecast"}, nil},
		{config.Anthropic, ToolChoice{}, nil, output, map[string]any{"type": "any"}, []string{"calculate", "weather_forecast", "response"}, nil},
		{config.Anthropic, none, nil, output, map[string]any{"type": "tool", "name": "response"},
			[]string{"calculate", "weather_forecast", "response"}, nil},
		{config.Ollama, ToolChoice{}, nil, nil, nil, []string{"calculate", "weather_forecast"}, nil},
		{config.Ollama, none, nil, nil, nil, nil, nil},
		{config.Ollama, named, nil, output, nil, []string{"calculate"}, map[string]any{"format": jsonAny(verdictSchema)}},
	}
	for i, tc := range tests {
		t.Run(fmt.Sprintf("%d-%s-%s", i, tc.p, tc.choice.Mode), func(t *testing.T) {
			f := newFake(t, okReply(tc.p, "ok"))
			req := Request{Messages: []Message{{Role: User, Content: "go"}}, Tools: testTools, ToolChoice: tc.choice,
				ParallelToolCalls: tc.parallel, Output: tc.output}
			if _, err := backendFor(t, tc.p, "b", f).do(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			body := f.requests()[0].Body
			if diff := cmp.Diff(tc.want, body["tool_choice"]); diff != "" {
				t.Errorf("tool_choice (-want +got):\n%s", diff)
			}
			var names []string
			tools, _ := body["tools"].([]any)
			for _, tl := range tools {
				m := tl.(map[string]any)
				if fn, ok := m["function"].(map[string]any); ok {
					m = fn
				}
				names = append(names, m["name"].(string))
			}
			if diff := cmp.Diff(tc.tools, names); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
			for k, v := range tc.extra {
				if diff := cmp.Diff(v, body[k]); diff != "" {
					t.Errorf("%s (-want +got):\n%s", k, diff)
				}
			}
		})
	}
}

func jsonAny(b []byte) any {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		panic(err)
	}
	return v
}

func TestWireMaxTokensField(t *testing.T) {
	tests := []struct {
		p     config.Provider
		base  string
		field string
	}{
		{config.OpenAI, "", "max_completion_tokens"},
		{config.OpenAI, "https://API.openai.com/v1/", "max_completion_tokens"},
		{config.OpenAI, "http://localhost:8000/v1", "max_tokens"},
		{config.XAI, "", "max_tokens"},
	}
	for _, tc := range tests {
		b, err := NewBackend(config.Backend{Provider: tc.p, BaseURL: tc.base}, "k", nil)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(b.provider.(*chatCompletions).request(Request{MaxTokens: 100}))
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		if body[tc.field] != 100.0 || len(body) != 3 { // model, messages, the cap
			t.Errorf("%s %q: body %v, want %s", tc.p, tc.base, body, tc.field)
		}
	}
}

func TestWireNoKeyNoAuthHeader(t *testing.T) {
	for _, p := range []config.Provider{config.OpenAI, config.Anthropic} {
		f := newFake(t, okReply(p, "ok"))
		b, err := NewBackend(config.Backend{Provider: p, BaseURL: f.URL, RateLimitTPM: 100000, MaxConcurrent: 1}, "", f.Client())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.do(context.Background(), Request{Messages: testMessages}); err != nil {
			t.Fatal(err)
		}
		h := f.requests()[0].Header
		if _, ok := h["Authorization"]; ok {
			t.Errorf("%s: Authorization sent without a key", p)
		}
		if _, ok := h["X-Api-Key"]; ok {
			t.Errorf("%s: x-api-key sent without a key", p)
		}
	}
}

func TestWireBadArguments(t *testing.T) {
	tests := []struct {
		args    string // the arguments string the model wrote
		want    string // Arguments as kept
		errText string // "" : valid
	}{
		{`{"expression": "6*`, `{"expression": "6*`, "arguments are not valid JSON"},
		{`[1, 2]`, `[1, 2]`, "got an array"},
		{``, `{}`, ""},
		{`  {"expression":"1"} `, `{"expression":"1"}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.args, func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
				writeJSON(w, map[string]any{"model": "m", "choices": []any{map[string]any{"index": 0, "finish_reason": "tool_calls",
					"message": map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
						"id": "call_x", "type": "function", "function": map[string]any{"name": "calculate", "arguments": tc.args}}}}}}})
			})
			rep, err := backendFor(t, config.OpenAI, "b", f).do(context.Background(), Request{Messages: testMessages, Tools: testTools})
			if err != nil {
				t.Fatal(err)
			}
			c := rep.ToolCalls[0]
			if string(c.Arguments) != tc.want {
				t.Errorf("arguments %q, want %q", c.Arguments, tc.want)
			}
			switch {
			case tc.errText == "" && c.Err != nil:
				t.Errorf("err %v", c.Err)
			case tc.errText != "" && (!errors.Is(c.Err, ErrBadArguments) || !strings.Contains(c.Err.Error(), tc.errText)):
				t.Errorf("err %v, want one saying %q", c.Err, tc.errText)
			}
			// The call goes back to the model as it wrote it (openai), or as
			// {} where an object is required (anthropic).
			next := Request{Tools: testTools, Messages: append(append([]Message(nil), testMessages...), rep.Message(),
				Message{Role: Tool, ToolCallID: c.ID, Content: "error: " + fmt.Sprint(c.Err), IsError: true})}
			for _, p := range []config.Provider{config.OpenAI, config.Anthropic} {
				g := newFake(t, okReply(p, "ok"))
				if _, err := backendFor(t, p, "b", g).do(context.Background(), next); err != nil {
					t.Fatal(err)
				}
				msgs := g.requests()[0].Body["messages"].([]any)
				var sent any
				for _, m := range msgs {
					mm := m.(map[string]any)
					if mm["role"] != "assistant" {
						continue
					}
					if calls, ok := mm["tool_calls"].([]any); ok {
						sent = calls[0].(map[string]any)["function"].(map[string]any)["arguments"]
					}
					if blocks, ok := mm["content"].([]any); ok {
						sent = blocks[0].(map[string]any)["input"]
					}
				}
				want := any(tc.want)
				if p == config.Anthropic {
					want = jsonAny(objectArguments(c))
				}
				if diff := cmp.Diff(want, sent); diff != "" {
					t.Errorf("%s: arguments sent back (-want +got):\n%s", p, diff)
				}
			}
		})
	}
}

func TestWireCompatIndexReuse(t *testing.T) {
	// Ollama's /v1 and some other servers number every parallel call 0 and
	// tell them apart by id.
	f := newFake(t, sseEvents(
		`{"choices":[{"index":0,"delta":{"role":"assistant","content":"","tool_calls":[{"id":"call_a","index":0,"type":"function","function":{"name":"calculate","arguments":"{\"expression\":\"1+1\"}"}}]},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"role":"assistant","content":"","tool_calls":[{"id":"call_b","index":0,"type":"function","function":{"name":"calculate","arguments":"{\"expression\":\"2+2\"}"}}]},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":"tool_calls"}]}`,
		`[DONE]`))
	rep, err := backendFor(t, config.OpenAI, "b", f).do(context.Background(), Request{Messages: testMessages, Tools: testTools,
		OnDelta: func(Delta) {}})
	if err != nil {
		t.Fatal(err)
	}
	want := []ToolCall{{ID: "call_a", Name: "calculate", Arguments: json.RawMessage(`{"expression":"1+1"}`)},
		{ID: "call_b", Name: "calculate", Arguments: json.RawMessage(`{"expression":"2+2"}`)}}
	if diff := cmp.Diff(want, rep.ToolCalls, replyCmp); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// wireErrors are the failures every provider must report as what they are.
func TestWireErrors(t *testing.T) {
	status := func(code int, body []byte, hdr ...string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			for i := 0; i+1 < len(hdr); i += 2 {
				w.Header().Set(hdr[i], hdr[i+1])
			}
			w.WriteHeader(code)
			_, _ = w.Write(body)
		}
	}
	html := serveFile(t, "proxy_error.html", "text/html; charset=utf-8")
	for _, wp := range wireProviders {
		errFile := func(code string) []byte {
			if wp.dir == "ollama" {
				if code == "500" {
					return golden(t, "ollama/error_500.json")
				}
				return []byte(`{"error":"` + code + ` from the proxy"}`)
			}
			return golden(t, filepath.Join(wp.dir, "error_"+code+".json"))
		}
		msg429 := map[string]string{"openai": "tokens: Rate limit reached for gpt-4o",
			"anthropic": "rate_limit_error: This request would exceed", "ollama": "429 from the proxy"}[wp.dir]
		msg401 := map[string]string{"openai": "invalid_request_error: Incorrect API key provided",
			"anthropic": "authentication_error: invalid x-api-key", "ollama": "401 from the proxy"}[wp.dir]
		tests := []struct {
			name   string
			reply  http.HandlerFunc
			stream bool
			want   error
			says   string // the error text must hold this
			after  time.Duration
		}{
			{"429 retry-after", status(429, errFile("429"), "Retry-After", "7"), false, ErrRateLimited, "HTTP 429 (rate limited): " + msg429, 7 * time.Second},
			// The OpenAI and Anthropic SDKs (Stainless) read retry-after-ms
			// first, then retry-after (openai-python _base_client.py
			// _parse_retry_after_header); Azure OpenAI sends it.
			{"429 retry-after-ms", status(429, errFile("429"), "Retry-After-Ms", "1500", "Retry-After", "2"), false, ErrRateLimited,
				"HTTP 429 (rate limited): " + msg429, 1500 * time.Millisecond},
			{"500", status(500, errFile("500")), false, ErrServer, "HTTP 500 (provider server error): ", 0},
			{"401", status(401, errFile("401")), false, ErrAuth, "HTTP 401 (authentication failed): " + msg401, 0},
			{"502 html", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(502)
				fmt.Fprint(w, "<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>")
			}, false, ErrServer, "HTTP 502 (provider server error): <html><head><title>502 Bad Gateway", 0},
			{"html 200", html, false, ErrMalformed, `an HTML page, not JSON (HTTP 200, text/html; charset=utf-8, body starts "<!DOCTYPE html> <html lang=\"en\"> <head>`, 0},
			{"html 200 streamed", html, true, ErrMalformed, `(HTTP 200, text/html; charset=utf-8, body starts "<!DOCTYPE html>`, 0},
			{"text 200", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/plain")
				fmt.Fprint(w, "upstream connect error\x00 or disconnect/reset before headers")
			}, false, ErrMalformed, `not JSON the provider's way: invalid character 'u' looking for beginning of value (HTTP 200, text/plain, body starts "upstream connect error or disconnect/reset before headers")`, 0},
			{"truncated stream", serveFile(t, filepath.Join(wp.dir, "stream_truncated"+wp.ext), wp.stream), true, ErrMalformed,
				"stream ended before", 0},
			{"cut mid-event", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", wp.stream)
				w.Header().Set("Content-Length", "4000")
				b := golden(t, filepath.Join(wp.dir, "stream_tool_calls"+wp.ext))
				_, _ = w.Write(b[:len(b)/2])
			}, true, ErrMalformed, "", 0},
		}
		for _, tc := range tests {
			t.Run(string(wp.p)+"/"+tc.name, func(t *testing.T) {
				f := newFake(t, tc.reply)
				req := Request{Messages: testMessages}
				if tc.stream {
					req.OnDelta = func(Delta) {}
				}
				_, err := backendFor(t, wp.p, "b", f).do(context.Background(), req)
				if !errors.Is(err, tc.want) {
					t.Fatalf("err = %v, want %v", err, tc.want)
				}
				if !strings.Contains(err.Error(), tc.says) {
					t.Errorf("err = %v\nwant it to say %s", err, tc.says)
				}
				var se *StatusError
				if errors.As(err, &se) && se.RetryAfter != tc.after {
					t.Errorf("RetryAfter = %v, want %v", se.RetryAfter, tc.after)
				}
				if strings.Contains(err.Error(), "b:") || strings.Contains(err.Error(), "backend") {
					t.Errorf("a provider error names the backend (the Router does): %v", err)
				}
			})
		}
	}
}

func TestWireErrorReportedInStream(t *testing.T) {
	tests := []struct {
		p     config.Provider
		reply http.HandlerFunc
		want  error
		says  string
	}{
		{config.Anthropic, serveFile(t, "anthropic/stream_overloaded.sse", "text/event-stream"), ErrServer, "overloaded_error: Overloaded"},
		{config.OpenAI, sseEvents(`{"choices":[{"index":0,"delta":{"content":"Hi"}}]}`,
			`{"error":{"message":"Rate limit exceeded: free-models-per-min","type":"rate_limit_exceeded","code":429}}`),
			ErrRateLimited, "Rate limit exceeded"},
		{config.OpenAI, func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, map[string]any{"error": map[string]any{"message": "model is overloaded", "type": "server_error"}})
		}, ErrServer, "server_error: model is overloaded"},
		{config.OpenAI, func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, map[string]any{"error": map[string]any{"message": "You exceeded your current quota, please check your plan and billing details.",
				"type": "insufficient_quota", "param": nil, "code": "insufficient_quota"}})
		}, ErrQuota, "insufficient_quota: You exceeded your current quota"},
		{config.Ollama, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/x-ndjson")
			fmt.Fprintln(w, `{"model":"llama3.2","message":{"role":"assistant","content":"Hi"},"done":false}`)
			fmt.Fprintln(w, `{"error":"an error was encountered while running the model: unexpected EOF"}`)
		}, ErrServer, "an error was encountered while running the model"},
	}
	for _, tc := range tests {
		t.Run(string(tc.p), func(t *testing.T) {
			_, err := backendFor(t, tc.p, "b", newFake(t, tc.reply)).do(context.Background(),
				Request{Messages: testMessages, OnDelta: func(Delta) {}})
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("err = %v, want %v saying %q", err, tc.want, tc.says)
			}
		})
	}
}

func TestWireStreamAnsweredWithJSON(t *testing.T) {
	// A server that ignores stream: true answers with one JSON document; it
	// is read as such and its text handed on as one delta.
	for _, wp := range wireProviders {
		t.Run(string(wp.p), func(t *testing.T) {
			var deltas []Delta
			got, err := backendFor(t, wp.p, "b", newFake(t, okReply(wp.p, "whole"))).do(context.Background(),
				Request{Messages: testMessages, OnDelta: func(d Delta) { deltas = append(deltas, d) }})
			if err != nil {
				t.Fatal(err)
			}
			if got.Content != "whole" || len(deltas) != 1 || deltas[0].Text != "whole" {
				t.Errorf("reply %+v, deltas %+v", got, deltas)
			}
		})
	}
}

func TestExcerpt(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"plain", 200, "plain"},
		{"  a\r\n\tb \x00\x1b[31m c ", 200, "a b [31m c"},
		{"héllo wörld", 2, "h…"},
		{"héllo", 3, "hé…"},
		{"bad \xff\xfe utf8", 200, "bad \ufffd\ufffd utf8"},
	}
	for _, tc := range tests {
		if got := excerpt([]byte(tc.in), tc.n); got != tc.want {
			t.Errorf("excerpt(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

// BenchmarkDecodeStreamedToolCalls measures the provider layer's own cost
// for one streamed reply with two parallel tool calls (request encoding,
// SSE/NDJSON parsing, call assembly), without a network.
func BenchmarkDecodeStreamedToolCalls(b *testing.B) {
	for _, wp := range wireProviders[1:] { // xai is openai's protocol
		body, err := os.ReadFile(filepath.Join("testdata", wp.dir, "stream_tool_calls"+wp.ext))
		if err != nil {
			b.Fatal(err)
		}
		e := endpoint{name: "bench", url: "http://model.invalid", headers: http.Header{},
			client: bodyClient{contentType: wp.stream, body: body}}
		var p Provider
		switch wp.p {
		case config.Anthropic:
			p = newMessagesAPI(e, "m", "k")
		case config.Ollama:
			p = newOllamaChat(e, "m")
		default:
			p = newChatCompletions(e, "m", "k")
		}
		req := toolConversation()
		req.OnDelta = func(Delta) {}
		b.Run(wp.dir, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rep, err := p.Chat(context.Background(), req)
				if err != nil || len(rep.ToolCalls) != 2 {
					b.Fatalf("reply %+v, err %v", rep, err)
				}
			}
		})
	}
}
