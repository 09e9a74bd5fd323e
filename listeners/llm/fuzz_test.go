package llm

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
	"unicode/utf8"
)

// bodyClient answers every request with 200 and body, as a model server
// that says anything at all would.
type bodyClient struct{ body []byte }

func (c bodyClient) Do(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Request: r,
		Body: io.NopCloser(bytes.NewReader(c.body))}, nil
}

// FuzzProviderReply feeds arbitrary response bodies, plain and streamed, to
// every provider's decoder: a model server is untrusted input. Each call
// returns a reply or an error, never panics, and a reply's text is valid
// UTF-8 whenever the body was.
func FuzzProviderReply(f *testing.F) {
	f.Add([]byte(`{"choices":[{"message":{"role":"assistant","content":"hi"}}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`), false)
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"h\"}}]}\n\ndata: [DONE]\n\n"), true)
	f.Add([]byte(`{"content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":1,"output_tokens":1}}`), false)
	f.Add([]byte("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"h\"}}\n\n"), true)
	f.Add([]byte(`{"message":{"role":"assistant","content":"hi"},"done":true,"prompt_eval_count":1,"eval_count":1}`), false)
	f.Add([]byte("{\"message\":{\"content\":\"h\"},\"done\":false}\n{\"done\":true}\n"), true)
	f.Add([]byte(`{"choices":[{"message":{"content":null}}]}`), false)
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"\\ud800\"}}]}\n"), true)
	f.Fuzz(func(t *testing.T, body []byte, stream bool) {
		mk := func() endpoint {
			return endpoint{name: "fuzz", url: "http://model.invalid", headers: http.Header{}, client: bodyClient{body}}
		}
		for _, p := range []Provider{newChatCompletions(mk(), "m", "k"), newMessagesAPI(mk(), "m", "k"), newOllamaChat(mk(), "m")} {
			var streamed bytes.Buffer
			r := Request{Messages: []Message{{Role: User, Content: "hi"}}}
			if stream {
				r.OnDelta = func(d string) { streamed.WriteString(d) }
			}
			reply, err := p.Chat(context.Background(), r)
			if err != nil {
				continue
			}
			if utf8.Valid(body) && !utf8.ValidString(reply.Content) {
				t.Fatalf("%T: reply text is not UTF-8: %q", p, reply.Content)
			}
		}
	})
}
