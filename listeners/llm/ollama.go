package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// ollamaChat speaks Ollama's POST {base}/api/chat (no key; NDJSON when
// streamed).
type ollamaChat struct {
	endpoint
	model string
}

type olOptions struct {
	Temperature *float64 `json:"temperature,omitempty"`
	NumPredict  int      `json:"num_predict,omitempty"`
}

type olRequest struct {
	Model    string      `json:"model"`
	Messages []ccMessage `json:"messages"`
	Stream   bool        `json:"stream"`
	Options  *olOptions  `json:"options,omitempty"`
}

type olReply struct {
	Model           string     `json:"model"`
	Message         *ccMessage `json:"message"`
	Done            bool       `json:"done"`
	DoneReason      string     `json:"done_reason"`
	PromptEvalCount int        `json:"prompt_eval_count"`
	EvalCount       int        `json:"eval_count"`
	Error           string     `json:"error"`
}

func newOllamaChat(e endpoint, model string) *ollamaChat {
	e.url = strings.TrimRight(e.url, "/") + "/api/chat"
	return &ollamaChat{endpoint: e, model: model}
}

// Chat implements Provider.
func (o *ollamaChat) Chat(ctx context.Context, r Request) (Reply, error) {
	model := r.Model
	if model == "" {
		model = o.model
	}
	req := olRequest{Model: model, Stream: r.OnDelta != nil}
	if r.Temperature != nil || r.MaxTokens > 0 {
		req.Options = &olOptions{Temperature: r.Temperature, NumPredict: r.MaxTokens}
	}
	for _, m := range r.Messages {
		req.Messages = append(req.Messages, ccMessage(m))
	}
	resp, err := o.post(ctx, req)
	if err != nil {
		return Reply{}, err
	}
	out := Reply{Model: model, Backend: o.name, FinishReason: "stop", Usage: Usage{Requests: 1}}
	take := func(rep *olReply) {
		if rep.Model != "" {
			out.Model = rep.Model
		}
		if rep.DoneReason != "" {
			out.FinishReason = rep.DoneReason
		}
		out.Usage.PromptTokens, out.Usage.CompletionTokens = rep.PromptEvalCount, rep.EvalCount
	}
	if !req.Stream {
		var rep olReply
		if err := o.decode(resp, &rep); err != nil {
			return Reply{}, err
		}
		if rep.Message == nil {
			return Reply{}, fmt.Errorf("%s: %w: no message", o.name, ErrMalformed)
		}
		take(&rep)
		out.Content = rep.Message.Content
		return out, nil
	}
	var text strings.Builder
	done := false
	err = o.lines(resp, func(line []byte) (bool, error) {
		if len(strings.TrimSpace(string(line))) == 0 {
			return true, nil
		}
		var rep olReply
		if err := json.Unmarshal(line, &rep); err != nil {
			return false, err
		}
		if rep.Error != "" {
			return false, fmt.Errorf("%s", rep.Error)
		}
		if rep.Message != nil && rep.Message.Content != "" {
			text.WriteString(rep.Message.Content)
			r.OnDelta(rep.Message.Content)
		}
		if rep.Done {
			take(&rep)
			done = true
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return Reply{}, err
	}
	if !done {
		return Reply{}, fmt.Errorf("%s: %w: stream ended without done", o.name, ErrMalformed)
	}
	out.Content = text.String()
	return out, nil
}
