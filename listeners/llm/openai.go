package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
)

// chatCompletions speaks the OpenAI Chat Completions protocol (OpenAI, xAI
// and every OpenAI-compatible server: vLLM, LM Studio, llama.cpp, Ollama's
// /v1, OpenRouter…): POST {base}/chat/completions with a bearer key (none
// when the key is empty).
type chatCompletions struct {
	endpoint
	model string
	// completionTokens sends the cap as max_completion_tokens (OpenAI's own
	// API, whose reasoning models refuse max_tokens) instead of max_tokens
	// (xAI and the compatible servers).
	completionTokens bool
}

type ccRequest struct {
	Model               string            `json:"model"`
	Messages            []ccMessage       `json:"messages"`
	MaxTokens           int               `json:"max_tokens,omitempty"`
	MaxCompletionTokens int               `json:"max_completion_tokens,omitempty"`
	Temperature         *float64          `json:"temperature,omitempty"`
	Tools               []ccTool          `json:"tools,omitempty"`
	ToolChoice          any               `json:"tool_choice,omitempty"`
	ParallelToolCalls   *bool             `json:"parallel_tool_calls,omitempty"`
	ResponseFormat      *ccResponseFormat `json:"response_format,omitempty"`
	Stream              bool              `json:"stream,omitempty"`
	StreamOptions       *ccStreamOption   `json:"stream_options,omitempty"`
}

// ccMessage is a request message. Content is null for an assistant message
// that only calls tools (as the API itself returns it).
type ccMessage struct {
	Role       Role         `json:"role"`
	Content    *string      `json:"content"`
	ToolCalls  []ccToolCall `json:"tool_calls,omitempty"`
	ToolCallID string       `json:"tool_call_id,omitempty"`
}

type ccToolCall struct {
	ID       string         `json:"id"`
	Type     string         `json:"type"`
	Function ccFunctionCall `json:"function"`
	// ExtraContent is the call's extra_content as the server gave it.
	ExtraContent json.RawMessage `json:"extra_content,omitempty"`
}

type ccFunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type ccTool struct {
	Type     string     `json:"type"`
	Function ccFunction `json:"function"`
}

type ccFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      bool            `json:"strict,omitempty"`
}

type ccNamedChoice struct {
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

type ccResponseFormat struct {
	Type       string        `json:"type"`
	JSONSchema *ccJSONSchema `json:"json_schema,omitempty"`
}

type ccJSONSchema struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema"`
	Strict      bool            `json:"strict,omitempty"`
}

type ccStreamOption struct {
	IncludeUsage bool `json:"include_usage"`
}

type ccUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// ccReply is a whole reply or one streamed chunk.
type ccReply struct {
	Model   string     `json:"model"`
	Choices []ccChoice `json:"choices"`
	Usage   *ccUsage   `json:"usage"`
	Error   *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

type ccChoice struct {
	Index        int            `json:"index"`
	Message      ccReplyMessage `json:"message"`
	Delta        ccReplyMessage `json:"delta"`
	FinishReason *string        `json:"finish_reason"`
}

type ccReplyMessage struct {
	Content   *ccContent        `json:"content"`
	Refusal   *string           `json:"refusal"`
	ToolCalls []ccReplyToolCall `json:"tool_calls"`
}

// ccContent is a reply's content: a string, or (Mistral's reasoning
// models, through their OpenAI-compatible API) a list of chunks, of which
// the text chunks' text is the answer and the rest (thinking) is not.
type ccContent string

// UnmarshalJSON takes a string, or the text of a list of chunks.
func (c *ccContent) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '[' {
		var chunks []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(b, &chunks); err != nil {
			return err
		}
		var text strings.Builder
		for _, ch := range chunks {
			if ch.Type == "text" {
				text.WriteString(ch.Text)
			}
		}
		*c = ccContent(text.String())
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*c = ccContent(s)
	return nil
}

// ccReplyToolCall is a tool call of a reply, or a piece of one in a stream.
type ccReplyToolCall struct {
	Index        *int            `json:"index"`
	ID           string          `json:"id"`
	ExtraContent json.RawMessage `json:"extra_content"`
	Function     struct {
		Name      string `json:"name"`
		Arguments ccArgs `json:"arguments"`
	} `json:"function"`
}

// ccArgs is a call's arguments: a JSON string holding the arguments text, as
// the protocol says, or (from some compatible servers) the object itself.
type ccArgs []byte

// UnmarshalJSON takes a string's text, or any other JSON value as it is.
func (a *ccArgs) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*a = nil
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*a = ccArgs(s)
	default:
		*a = ccArgs(bytes.Clone(b))
	}
	return nil
}

func newChatCompletions(e endpoint, model, key string) *chatCompletions {
	e.url = strings.TrimRight(e.url, "/") + "/chat/completions"
	if key != "" {
		e.headers.Set("Authorization", "Bearer "+key)
	}
	return &chatCompletions{endpoint: e, model: model}
}

// request builds the wire request of r.
func (c *chatCompletions) request(r Request) ccRequest {
	req := ccRequest{Model: modelOr(r, c.model), Temperature: r.Temperature, Stream: r.OnDelta != nil}
	if c.completionTokens {
		req.MaxCompletionTokens = r.MaxTokens
	} else {
		req.MaxTokens = r.MaxTokens
	}
	if req.Stream {
		req.StreamOptions = &ccStreamOption{IncludeUsage: true}
	}
	for _, m := range r.Messages {
		content := m.Content
		if m.Role == Tool {
			content = resultText(m)
		}
		w := ccMessage{Role: m.Role, Content: &content, ToolCallID: openAICallID(m.ToolCallID)}
		if m.Role == Assistant && len(m.ToolCalls) > 0 && m.Content == "" {
			w.Content = nil
		}
		for _, tc := range m.ToolCalls {
			w.ToolCalls = append(w.ToolCalls, ccToolCall{ID: openAICallID(tc.ID), Type: "function",
				Function: ccFunctionCall{Name: tc.Name, Arguments: textArguments(tc)}, ExtraContent: tc.Extra})
		}
		req.Messages = append(req.Messages, w)
	}
	for _, t := range r.Tools {
		req.Tools = append(req.Tools, ccTool{Type: "function", Function: ccFunction{Name: t.Name,
			Description: t.Description, Parameters: t.parameters(), Strict: t.Strict}})
	}
	if len(req.Tools) > 0 {
		switch r.ToolChoice.Mode {
		case ToolNone, ToolRequired:
			req.ToolChoice = string(r.ToolChoice.Mode)
		case ToolNamed:
			var nc ccNamedChoice
			nc.Type, nc.Function.Name = "function", r.ToolChoice.Name
			req.ToolChoice = nc
		}
		req.ParallelToolCalls = r.ParallelToolCalls
	}
	if o := r.Output; o != nil {
		req.ResponseFormat = &ccResponseFormat{Type: "json_schema", JSONSchema: &ccJSONSchema{Name: o.name(),
			Description: o.Description, Schema: o.Schema, Strict: o.Strict}}
	}
	return req
}

// ccFinish maps a Chat Completions finish_reason.
func ccFinish(reason string) FinishReason {
	switch reason {
	case "stop", "":
		return FinishStop
	case "tool_calls", "function_call":
		return FinishToolCalls
	case "length":
		return FinishLength
	case "content_filter":
		return FinishContentFilter
	}
	return FinishOther
}

// Chat implements Provider.
func (c *chatCompletions) Chat(ctx context.Context, r Request) (Reply, error) {
	req := c.request(r)
	rb, err := c.post(ctx, req)
	if err != nil {
		return Reply{}, err
	}
	out := Reply{Model: req.Model, Backend: c.name, Usage: Usage{Requests: 1}}
	var (
		text, refusal strings.Builder
		calls         callBuilder
		stop          string
		finished      bool
	)
	take := func(rep *ccReply, streamed bool) error {
		if rep.Error != nil {
			return reportedError(rep.Error.Type, rep.Error.Message)
		}
		if rep.Model != "" {
			out.Model = rep.Model
		}
		if rep.Usage != nil {
			out.Usage.PromptTokens, out.Usage.CompletionTokens = rep.Usage.PromptTokens, rep.Usage.CompletionTokens
		}
		for _, ch := range rep.Choices {
			if ch.Index != 0 {
				continue
			}
			m := ch.Message
			if streamed {
				m = ch.Delta
			}
			if m.Content != nil && *m.Content != "" {
				text.WriteString(string(*m.Content))
				if r.OnDelta != nil {
					r.OnDelta(Delta{Text: string(*m.Content)})
				}
			}
			if m.Refusal != nil {
				refusal.WriteString(*m.Refusal)
			}
			for i, tc := range m.ToolCalls {
				key, hasKey := i, !streamed
				if tc.Index != nil {
					key, hasKey = *tc.Index, true
				}
				calls.piece(key, hasKey, tc.ID, tc.Function.Name, string(tc.Function.Arguments), r.OnDelta)
				calls.extra(tc.ExtraContent)
			}
			if ch.FinishReason != nil && *ch.FinishReason != "" {
				stop, finished = *ch.FinishReason, true
			}
		}
		return nil
	}
	switch {
	case !req.Stream || rb.json():
		// Unstreamed, or a server that answered a stream request with one
		// JSON document (it ignores stream, or reports an error).
		var rep ccReply
		if err := rb.decode(&rep); err != nil {
			return Reply{}, err
		}
		if err := take(&rep, false); err != nil {
			return Reply{}, err
		}
		if len(rep.Choices) == 0 {
			return Reply{}, rb.malformed("no choices in the reply")
		}
	default:
		done := false
		err := rb.events(func(_ string, data []byte) (bool, error) {
			if bytes.Equal(data, []byte("[DONE]")) {
				done = true
				return false, nil
			}
			var rep ccReply
			if err := json.Unmarshal(data, &rep); err != nil {
				return false, rb.malformed("stream event is not JSON the provider's way: %v", err)
			}
			return true, take(&rep, true)
		})
		if err != nil {
			return Reply{}, err
		}
		// A compatible server may end without [DONE] once it has said why
		// the model stopped; without either the stream was cut short.
		if !done && !finished {
			return Reply{}, rb.malformed("stream ended before [DONE]")
		}
	}
	out.Content, out.StopReason = text.String(), stop
	out.ToolCalls, out.NamelessCalls = calls.done()
	out.FinishReason = ccFinish(stop)
	switch {
	case len(out.ToolCalls) > 0:
		out.FinishReason = FinishToolCalls
	case refusal.Len() > 0 && out.Content == "":
		out.Content, out.FinishReason = refusal.String(), FinishRefusal
	}
	return out, nil
}
