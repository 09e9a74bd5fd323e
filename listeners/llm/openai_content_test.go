package llm

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/config"
)

// TestCompatContentChunks: Mistral's chat completions (an OpenAI-compatible
// server: provider openai with its base_url) give a reasoning model's
// content as a list of chunks — {"type":"thinking","thinking":[{"type":
// "text",…}]} then {"type":"text","text":…} — whole and in a stream's
// deltas (Mistral API spec: AssistantMessage content, TextChunk,
// ThinkChunk). The answer is the text chunks' text; the thinking is
// neither the answer nor streamed.
func TestCompatContentChunks(t *testing.T) {
	const thinking = `{"type":"thinking","thinking":[{"type":"text","text":"6*7 is 42."}]}`
	tests := []struct {
		name  string
		reply string
		ct    string
	}{
		{"whole", `{"id":"c1","object":"chat.completion","model":"magistral-medium-2509","choices":[{"index":0,` +
			`"message":{"role":"assistant","content":[` + thinking + `,{"type":"text","text":"It is 42."}]},` +
			`"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":20}}`, "application/json"},
		{"streamed", "data: {\"id\":\"c1\",\"model\":\"magistral-medium-2509\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":[" +
			thinking + "]},\"finish_reason\":null}]}\n\n" +
			"data: {\"id\":\"c1\",\"model\":\"magistral-medium-2509\",\"choices\":[{\"index\":0,\"delta\":{\"content\":[{\"type\":\"text\",\"text\":\"It is \"}]},\"finish_reason\":null}]}\n\n" +
			"data: {\"id\":\"c1\",\"model\":\"magistral-medium-2509\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"42.\"},\"finish_reason\":\"stop\"}]," +
			"\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":20}}\n\ndata: [DONE]\n\n", "text/event-stream"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, serveBody(tc.reply, tc.ct))
			var streamed strings.Builder
			req := Request{Messages: testMessages}
			if tc.ct == "text/event-stream" {
				req.OnDelta = func(d Delta) { streamed.WriteString(d.Text) }
			}
			rep, err := backendFor(t, config.OpenAI, "b", f).do(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Content != "It is 42." || rep.FinishReason != FinishStop {
				t.Errorf("reply %+v", rep)
			}
			if req.OnDelta != nil && streamed.String() != "It is 42." {
				t.Errorf("streamed %q", streamed.String())
			}
		})
	}
}

// serveBody answers with body under a content type.
func serveBody(body, contentType string) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		_, _ = w.Write([]byte(body))
	}
}
