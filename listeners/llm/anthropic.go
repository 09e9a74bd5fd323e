package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// anthropicVersion is the Messages API version sent in anthropic-version.
const anthropicVersion = "2023-06-01"

// anthropicDefaultMaxTokens is sent when a request sets no max_tokens (the
// Messages API requires one).
const anthropicDefaultMaxTokens = 4096

// messagesAPI speaks Anthropic's Messages API: POST {base}/messages with
// x-api-key. Every system message is kept, joined in order (fixes Q17).
type messagesAPI struct {
	endpoint
	model string
}

type amMessage struct {
	Role    Role   `json:"role"`
	Content string `json:"content"`
}

type amRequest struct {
	Model       string      `json:"model"`
	System      string      `json:"system,omitempty"`
	Messages    []amMessage `json:"messages"`
	MaxTokens   int         `json:"max_tokens"`
	Temperature *float64    `json:"temperature,omitempty"`
	Stream      bool        `json:"stream,omitempty"`
}

type amUsage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

type amReply struct {
	Model   string `json:"model"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StopReason string  `json:"stop_reason"`
	Usage      amUsage `json:"usage"`
}

type amEvent struct {
	Type    string   `json:"type"`
	Message *amReply `json:"message"`
	Delta   struct {
		Type       string `json:"type"`
		Text       string `json:"text"`
		StopReason string `json:"stop_reason"`
	} `json:"delta"`
	Usage *amUsage `json:"usage"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

func newMessagesAPI(e endpoint, model, key string) *messagesAPI {
	e.url = strings.TrimRight(e.url, "/") + "/messages"
	e.headers.Set("x-api-key", key)
	e.headers.Set("anthropic-version", anthropicVersion)
	return &messagesAPI{endpoint: e, model: model}
}

// Chat implements Provider.
func (a *messagesAPI) Chat(ctx context.Context, r Request) (Reply, error) {
	model := r.Model
	if model == "" {
		model = a.model
	}
	req := amRequest{Model: model, MaxTokens: r.MaxTokens, Temperature: r.Temperature, Stream: r.OnDelta != nil}
	if req.MaxTokens <= 0 {
		req.MaxTokens = anthropicDefaultMaxTokens
	}
	var system []string
	for _, m := range r.Messages {
		if m.Role == System {
			system = append(system, m.Content)
			continue
		}
		req.Messages = append(req.Messages, amMessage(m))
	}
	req.System = strings.Join(system, "\n\n")
	resp, err := a.post(ctx, req)
	if err != nil {
		return Reply{}, err
	}
	out := Reply{Model: model, Backend: a.name, FinishReason: "end_turn", Usage: Usage{Requests: 1}}
	if !req.Stream {
		var rep amReply
		if err := a.decode(resp, &rep); err != nil {
			return Reply{}, err
		}
		if rep.Content == nil {
			return Reply{}, fmt.Errorf("%s: %w: no content", a.name, ErrMalformed)
		}
		var text strings.Builder
		for _, c := range rep.Content {
			if c.Type == "text" {
				text.WriteString(c.Text)
			}
		}
		out.Content = text.String()
		if rep.Model != "" {
			out.Model = rep.Model
		}
		if rep.StopReason != "" {
			out.FinishReason = rep.StopReason
		}
		out.Usage.PromptTokens, out.Usage.CompletionTokens = rep.Usage.InputTokens, rep.Usage.OutputTokens
		return out, nil
	}
	var text strings.Builder
	done := false
	err = a.lines(resp, func(line []byte) (bool, error) {
		data, ok := sseData(line)
		if !ok || len(data) == 0 {
			return true, nil
		}
		var ev amEvent
		if err := json.Unmarshal(data, &ev); err != nil {
			return false, err
		}
		switch ev.Type {
		case "message_start":
			if ev.Message != nil {
				if ev.Message.Model != "" {
					out.Model = ev.Message.Model
				}
				out.Usage.PromptTokens = ev.Message.Usage.InputTokens
				out.Usage.CompletionTokens = ev.Message.Usage.OutputTokens
			}
		case "content_block_delta":
			if ev.Delta.Type == "text_delta" && ev.Delta.Text != "" {
				text.WriteString(ev.Delta.Text)
				r.OnDelta(ev.Delta.Text)
			}
		case "message_delta":
			if ev.Delta.StopReason != "" {
				out.FinishReason = ev.Delta.StopReason
			}
			if ev.Usage != nil {
				out.Usage.CompletionTokens = ev.Usage.OutputTokens
			}
		case "message_stop":
			done = true
			return false, nil
		case "error":
			msg := "stream error"
			if ev.Error != nil {
				msg = ev.Error.Type + ": " + ev.Error.Message
			}
			return false, fmt.Errorf("%s", msg)
		}
		return true, nil
	})
	if err != nil {
		return Reply{}, err
	}
	if !done {
		return Reply{}, fmt.Errorf("%s: %w: stream ended without message_stop", a.name, ErrMalformed)
	}
	out.Content = text.String()
	return out, nil
}
