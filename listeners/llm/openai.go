package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// chatCompletions speaks the OpenAI Chat Completions protocol (OpenAI and
// xAI): POST {base}/chat/completions with a bearer key.
type chatCompletions struct {
	endpoint
	model string
}

type ccMessage struct {
	Role    Role   `json:"role"`
	Content string `json:"content"`
}

type ccRequest struct {
	Model         string          `json:"model"`
	Messages      []ccMessage     `json:"messages"`
	MaxTokens     int             `json:"max_tokens,omitempty"`
	Temperature   *float64        `json:"temperature,omitempty"`
	Stream        bool            `json:"stream,omitempty"`
	StreamOptions *ccStreamOption `json:"stream_options,omitempty"`
}

type ccStreamOption struct {
	IncludeUsage bool `json:"include_usage"`
}

type ccUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

type ccReply struct {
	Model   string `json:"model"`
	Choices []struct {
		Message      ccMessage `json:"message"`
		Delta        ccMessage `json:"delta"`
		FinishReason *string   `json:"finish_reason"`
	} `json:"choices"`
	Usage *ccUsage `json:"usage"`
}

func newChatCompletions(e endpoint, model, key string) *chatCompletions {
	e.url = strings.TrimRight(e.url, "/") + "/chat/completions"
	e.headers.Set("Authorization", "Bearer "+key)
	return &chatCompletions{endpoint: e, model: model}
}

// Chat implements Provider.
func (c *chatCompletions) Chat(ctx context.Context, r Request) (Reply, error) {
	model := r.Model
	if model == "" {
		model = c.model
	}
	req := ccRequest{Model: model, MaxTokens: r.MaxTokens, Temperature: r.Temperature, Stream: r.OnDelta != nil}
	if req.Stream {
		req.StreamOptions = &ccStreamOption{IncludeUsage: true}
	}
	for _, m := range r.Messages {
		req.Messages = append(req.Messages, ccMessage(m))
	}
	resp, err := c.post(ctx, req)
	if err != nil {
		return Reply{}, err
	}
	out := Reply{Model: model, Backend: c.name, FinishReason: "stop", Usage: Usage{Requests: 1}}
	take := func(rep *ccReply) {
		if rep.Model != "" {
			out.Model = rep.Model
		}
		if rep.Usage != nil {
			out.Usage.PromptTokens, out.Usage.CompletionTokens = rep.Usage.PromptTokens, rep.Usage.CompletionTokens
		}
		if len(rep.Choices) > 0 && rep.Choices[0].FinishReason != nil {
			out.FinishReason = *rep.Choices[0].FinishReason
		}
	}
	if !req.Stream {
		var rep ccReply
		if err := c.decode(resp, &rep); err != nil {
			return Reply{}, err
		}
		if len(rep.Choices) == 0 {
			return Reply{}, fmt.Errorf("%s: %w: no choices", c.name, ErrMalformed)
		}
		take(&rep)
		out.Content = rep.Choices[0].Message.Content
		return out, nil
	}
	var text strings.Builder
	done := false
	err = c.lines(resp, func(line []byte) (bool, error) {
		data, ok := sseData(line)
		if !ok || len(data) == 0 {
			return true, nil
		}
		if string(data) == "[DONE]" {
			done = true
			return false, nil
		}
		var rep ccReply
		if err := json.Unmarshal(data, &rep); err != nil {
			return false, err
		}
		take(&rep)
		if len(rep.Choices) > 0 && rep.Choices[0].Delta.Content != "" {
			text.WriteString(rep.Choices[0].Delta.Content)
			r.OnDelta(rep.Choices[0].Delta.Content)
		}
		return true, nil
	})
	if err != nil {
		return Reply{}, err
	}
	if !done {
		return Reply{}, fmt.Errorf("%s: %w: stream ended without [DONE]", c.name, ErrMalformed)
	}
	out.Content = text.String()
	return out, nil
}
