package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// bodyClient answers every request with 200, contentType and body, as a
// model server that says anything at all would.
type bodyClient struct {
	contentType string
	body        []byte
}

func (c bodyClient) Do(r *http.Request) (*http.Response, error) {
	h := http.Header{}
	if c.contentType != "" {
		h.Set("Content-Type", c.contentType)
	}
	return &http.Response{StatusCode: http.StatusOK, Header: h, Request: r,
		Body: io.NopCloser(bytes.NewReader(c.body))}, nil
}

// fuzzRequests are the requests each fuzzed body answers: plain, with
// tools, and with tools and a structured answer (anthropic's forced tool).
var fuzzRequests = []Request{
	{Messages: []Message{{Role: User, Content: "hi"}}},
	{Messages: []Message{{Role: User, Content: "hi"}}, Tools: testTools},
	{Messages: []Message{{Role: User, Content: "hi"}}, Tools: testTools,
		Output: &OutputSchema{Name: "verdict", Schema: json.RawMessage(`{"type":"object"}`)}},
}

var knownFinish = map[FinishReason]bool{FinishStop: true, FinishToolCalls: true, FinishLength: true,
	FinishContentFilter: true, FinishRefusal: true, FinishOther: true}

// FuzzProviderReply feeds arbitrary response bodies, plain and streamed,
// under each content type a server may claim, to every provider's decoder: a
// model server is untrusted input. Each call returns a reply or an error,
// never panics; a reply's text is valid UTF-8 whenever the body was; its
// tool calls have distinct non-empty ids and arguments that are a JSON
// object unless the call's Err says otherwise; its finish reason is one of
// the normalised ones; a failure is one of the layer's errors.
func FuzzProviderReply(f *testing.F) {
	f.Add([]byte(`{"choices":[{"message":{"role":"assistant","content":"hi"}}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`), false, uint8(0))
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"h\"}}]}\n\ndata: [DONE]\n\n"), true, uint8(1))
	f.Add([]byte(`{"content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":1,"output_tokens":1}}`), false, uint8(0))
	f.Add([]byte("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"h\"}}\n\n"), true, uint8(1))
	f.Add([]byte(`{"message":{"role":"assistant","content":"hi"},"done":true,"prompt_eval_count":1,"eval_count":1}`), false, uint8(0))
	f.Add([]byte("{\"message\":{\"content\":\"h\"},\"done\":false}\n{\"done\":true}\n"), true, uint8(2))
	f.Add([]byte(`{"choices":[{"message":{"content":null}}]}`), false, uint8(0))
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"\\ud800\"}}]}\n"), true, uint8(1))
	f.Add([]byte(`{"choices":[{"message":{"tool_calls":[{"id":"a","function":{"name":"f","arguments":"{\"x\":"}},{"function":{"name":"g","arguments":{"y":1}}}]},"finish_reason":"tool_calls"}]}`), false, uint8(0))
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"x\"}},{\"index\":1,\"id\":\"b\",\"function\":{\"name\":\"g\"}}]}}]}\n\ndata: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\":1}\"}},{\"index\":0,\"id\":\"c\"}]},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n"), true, uint8(1))
	f.Add([]byte(`{"content":[{"type":"tool_use","id":"t1","name":"verdict","input":{"a":1}},{"type":"tool_use","name":"calculate","input":[]}],"stop_reason":"tool_use"}`), false, uint8(0))
	f.Add([]byte("data: {\"type\":\"content_block_start\",\"index\":3,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"verdict\",\"input\":{\"z\":2}}}\n\ndata: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\"}}\n\ndata: {\"type\":\"content_block_stop\",\"index\":3}\n\ndata: {\"type\":\"message_stop\"}\n"), true, uint8(1))
	f.Add([]byte("{\"message\":{\"tool_calls\":[{\"function\":{\"name\":\"f\",\"arguments\":{\"a\":1}}},{\"function\":{\"name\":\"f\",\"arguments\":{\"a\":1}}}]},\"done\":false}\n{\"done\":true,\"done_reason\":\"stop\"}\n"), true, uint8(2))
	f.Add([]byte("<!DOCTYPE html><html><body>proxy</body></html>"), true, uint8(3))
	for _, name := range []string{"openai/stream_tool_calls.sse", "anthropic/stream_tool_calls.sse", "ollama/stream_tool_calls.ndjson",
		"openai/reply_tool_calls.json", "anthropic/reply_tool_calls.json", "ollama/reply_tool_calls.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, !strings.HasSuffix(name, ".json"), uint8(0))
	}
	contentTypes := []string{"", "text/event-stream", "application/x-ndjson", "text/html; charset=utf-8", "application/json"}
	f.Fuzz(func(t *testing.T, body []byte, stream bool, ct uint8) {
		mk := func() endpoint {
			return endpoint{name: "fuzz", url: "http://model.invalid", headers: http.Header{},
				client: bodyClient{contentType: contentTypes[int(ct)%len(contentTypes)], body: body}}
		}
		for _, p := range []Provider{newChatCompletions(mk(), "m", "k"), newMessagesAPI(mk(), "m", "k"), newOllamaChat(mk(), "m")} {
			for _, r := range fuzzRequests {
				var streamed strings.Builder
				if stream {
					r.OnDelta = func(d Delta) { streamed.WriteString(d.Text) }
				}
				reply, err := p.Chat(context.Background(), r)
				if err != nil {
					if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrServer) && !errors.Is(err, ErrRateLimited) &&
						!errors.Is(err, ErrAuth) && !errors.Is(err, ErrRequest) {
						t.Fatalf("%T: error of no known kind: %v", p, err)
					}
					continue
				}
				if utf8.Valid(body) && !utf8.ValidString(reply.Content) {
					t.Fatalf("%T: reply text is not UTF-8: %q", p, reply.Content)
				}
				if !knownFinish[reply.FinishReason] {
					t.Fatalf("%T: finish reason %q", p, reply.FinishReason)
				}
				if len(reply.ToolCalls) > 0 && reply.FinishReason != FinishToolCalls {
					t.Fatalf("%T: %d tool calls, finish reason %q", p, len(reply.ToolCalls), reply.FinishReason)
				}
				ids := map[string]bool{}
				for _, c := range reply.ToolCalls {
					if c.ID == "" || ids[c.ID] {
						t.Fatalf("%T: tool call id %q empty or repeated in %+v", p, c.ID, reply.ToolCalls)
					}
					ids[c.ID] = true
					if c.Err == nil && !isJSONObject(c.Arguments) {
						t.Fatalf("%T: arguments %q pass as an object", p, c.Arguments)
					}
					if c.Err != nil && !errors.Is(c.Err, ErrBadArguments) {
						t.Fatalf("%T: argument error %v", p, c.Err)
					}
				}
				// What was sent back as an assistant message must be a
				// request every provider can encode.
				next := Request{Messages: append([]Message{{Role: User, Content: "hi"}}, reply.Message())}
				for _, c := range reply.ToolCalls {
					next.Messages = append(next.Messages, Message{Role: Tool, ToolCallID: c.ID, Content: "ok"})
				}
				if err := next.Validate(); err != nil {
					t.Fatalf("%T: the reply does not make a valid next request: %v", p, err)
				}
			}
		}
	})
}
