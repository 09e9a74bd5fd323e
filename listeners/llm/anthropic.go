package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
)

// anthropicVersion is the Messages API version sent in anthropic-version.
const anthropicVersion = "2023-06-01"

// anthropicDefaultMaxTokens is sent when a request sets no max_tokens (the
// Messages API requires one).
const anthropicDefaultMaxTokens = 4096

// answerToolDescription describes the forced tool of a structured answer
// when the OutputSchema gives no description.
const answerToolDescription = "Give your final answer by calling this tool: its input is the answer."

// messagesAPI speaks Anthropic's Messages API: POST {base}/messages with
// x-api-key (none when the key is empty). Every system message goes to
// system, joined in order (Q17); tool results go back as tool_result blocks
// of one user message; a structured answer is a forced tool.
type messagesAPI struct {
	endpoint
	model string
}

type amRequest struct {
	Model       string        `json:"model"`
	System      string        `json:"system,omitempty"`
	Messages    []amMessage   `json:"messages"`
	MaxTokens   int           `json:"max_tokens"`
	Temperature *float64      `json:"temperature,omitempty"`
	Tools       []amTool      `json:"tools,omitempty"`
	ToolChoice  *amToolChoice `json:"tool_choice,omitempty"`
	Stream      bool          `json:"stream,omitempty"`
}

// amMessage is a request message; Content is a string, or []amBlock when it
// holds tool calls or tool results.
type amMessage struct {
	Role    Role `json:"role"`
	Content any  `json:"content"`
}

// amBlock is a content block of a request: text, tool_use or tool_result.
type amBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   string          `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	// raw, when set, is the whole block as a reply gave it (a thinking or
	// redacted_thinking block sent back unchanged).
	raw json.RawMessage
}

// MarshalJSON writes a block given whole as it is, else its fields.
func (b amBlock) MarshalJSON() ([]byte, error) {
	if b.raw != nil {
		return b.raw, nil
	}
	type plain amBlock
	return json.Marshal(plain(b))
}

// reasoningBlocks returns the blocks of an assistant message's Reasoning
// (a JSON array of blocks; anything else is none).
func reasoningBlocks(r json.RawMessage) []amBlock {
	var raws []json.RawMessage
	if len(r) == 0 || json.Unmarshal(r, &raws) != nil {
		return nil
	}
	blocks := make([]amBlock, 0, len(raws))
	for _, raw := range raws {
		if isJSONObject(bytes.TrimSpace(raw)) {
			blocks = append(blocks, amBlock{raw: raw})
		}
	}
	return blocks
}

type amTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type amToolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use,omitempty"`
}

type amUsage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

// prompt is every input token: fresh, written to the cache, read from it.
func (u amUsage) prompt() int {
	return u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
}

type amError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// amReplyBlock is a content block of a reply (text, tool_use; thinking and
// redacted_thinking are kept whole in raw; others are skipped).
type amReplyBlock struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Input    json.RawMessage `json:"input"`
	Thinking string          `json:"thinking"`
	raw      json.RawMessage
}

// UnmarshalJSON decodes a block, keeping a reasoning block whole.
func (b *amReplyBlock) UnmarshalJSON(data []byte) error {
	type plain amReplyBlock
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	*b = amReplyBlock(p)
	if amReasoning(b.Type) {
		b.raw = bytes.Clone(data)
	}
	return nil
}

// amReasoning reports whether a block type is reasoning sent back as is.
func amReasoning(typ string) bool { return typ == "thinking" || typ == "redacted_thinking" }

type amReply struct {
	Type       string         `json:"type"`
	Model      string         `json:"model"`
	Content    []amReplyBlock `json:"content"`
	StopReason string         `json:"stop_reason"`
	Usage      amUsage        `json:"usage"`
	Error      *amError       `json:"error"`
}

type amEvent struct {
	Type         string        `json:"type"`
	Index        int           `json:"index"`
	Message      *amReply      `json:"message"`
	ContentBlock *amReplyBlock `json:"content_block"`
	Delta        struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		Thinking    string `json:"thinking"`
		Signature   string `json:"signature"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *amUsage `json:"usage"`
	Error *amError `json:"error"`
}

func newMessagesAPI(e endpoint, model, key string) *messagesAPI {
	e.url = strings.TrimRight(e.url, "/") + "/messages"
	if key != "" {
		e.headers.Set("x-api-key", key)
	}
	e.headers.Set("anthropic-version", anthropicVersion)
	return &messagesAPI{endpoint: e, model: model}
}

// request builds the wire request of r.
func (a *messagesAPI) request(r Request) amRequest {
	req := amRequest{Model: modelOr(r, a.model), MaxTokens: r.MaxTokens, Temperature: r.Temperature,
		Stream: r.OnDelta != nil}
	if req.MaxTokens <= 0 {
		req.MaxTokens = anthropicDefaultMaxTokens
	}
	var system []string
	results := false // the last message holds tool results (more may join it)
	for _, m := range r.Messages {
		switch m.Role {
		case System:
			system = append(system, m.Content)
			continue
		case Tool:
			b := amBlock{Type: "tool_result", ToolUseID: anthropicCallID(m.ToolCallID), Content: m.Content, IsError: m.IsError}
			if results {
				last := &req.Messages[len(req.Messages)-1]
				last.Content = append(last.Content.([]amBlock), b)
			} else {
				req.Messages = append(req.Messages, amMessage{Role: User, Content: []amBlock{b}})
				results = true
			}
			continue
		case User:
			if results {
				// Text after tool results joins their user message.
				if strings.TrimSpace(m.Content) != "" {
					last := &req.Messages[len(req.Messages)-1]
					last.Content = append(last.Content.([]amBlock), amBlock{Type: "text", Text: m.Content})
				}
				results = false
				continue
			}
		case Assistant:
			if len(m.ToolCalls) > 0 {
				// The reasoning that led to the calls goes back first, as
				// it came; elsewhere the API may do without it, and
				// drops it from earlier turns anyway.
				blocks := reasoningBlocks(m.Reasoning)
				if strings.TrimSpace(m.Content) != "" {
					blocks = append(blocks, amBlock{Type: "text", Text: m.Content})
				}
				for _, c := range m.ToolCalls {
					blocks = append(blocks, amBlock{Type: "tool_use", ID: anthropicCallID(c.ID), Name: c.Name, Input: objectArguments(c)})
				}
				req.Messages = append(req.Messages, amMessage{Role: Assistant, Content: blocks})
				results = false
				continue
			}
		}
		req.Messages = append(req.Messages, amMessage{Role: m.Role, Content: m.Content})
		results = false
	}
	req.Messages = amTurns(req.Messages)
	req.System = strings.Join(system, "\n\n")
	for _, t := range r.Tools {
		req.Tools = append(req.Tools, amTool{Name: t.Name, Description: t.Description, InputSchema: t.parameters()})
	}
	o := r.Output
	if o != nil {
		desc := o.Description
		if desc == "" {
			desc = answerToolDescription
		}
		req.Tools = append(req.Tools, amTool{Name: o.name(), Description: desc, InputSchema: o.Schema})
	}
	if len(req.Tools) == 0 {
		return req
	}
	mode := r.ToolChoice.Mode
	switch {
	case mode == ToolNamed:
		req.ToolChoice = &amToolChoice{Type: "tool", Name: r.ToolChoice.Name}
	case o != nil && (len(r.Tools) == 0 || mode == ToolNone):
		req.ToolChoice = &amToolChoice{Type: "tool", Name: o.name()}
	case o != nil || mode == ToolRequired:
		req.ToolChoice = &amToolChoice{Type: "any"}
	case mode == ToolNone:
		req.ToolChoice = &amToolChoice{Type: "none"}
	}
	if p := r.ParallelToolCalls; p != nil && !*p {
		if req.ToolChoice == nil {
			req.ToolChoice = &amToolChoice{Type: "auto"}
		}
		req.ToolChoice.DisableParallelToolUse = req.ToolChoice.Type != "none"
	}
	return req
}

// amTurns returns the messages as the Messages API takes them: a message
// whose text is empty or white space is left out (the API refuses it:
// "all messages must have non-empty content except for the optional final
// assistant message"), and consecutive messages of one role become one,
// their blocks in order (the API would combine them itself; one turn is
// what it is trained on, and what a tool_result turn must be).
func amTurns(msgs []amMessage) []amMessage {
	out := msgs[:0]
	for _, m := range msgs {
		if s, ok := m.Content.(string); ok && strings.TrimSpace(s) == "" {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Role == m.Role {
			out[n-1].Content = append(amBlocks(out[n-1].Content), amBlocks(m.Content)...)
			continue
		}
		out = append(out, m)
	}
	return out
}

// amBlocks returns a message's content as blocks.
func amBlocks(content any) []amBlock {
	switch c := content.(type) {
	case []amBlock:
		return c
	case string:
		return []amBlock{{Type: "text", Text: c}}
	}
	return nil
}

// amFinish maps a Messages API stop_reason.
func amFinish(reason string) FinishReason {
	switch reason {
	case "end_turn", "stop_sequence", "":
		return FinishStop
	case "tool_use":
		return FinishToolCalls
	case "max_tokens", "model_context_window_exceeded":
		return FinishLength
	case "refusal":
		return FinishRefusal
	}
	return FinishOther
}

// Chat implements Provider.
func (a *messagesAPI) Chat(ctx context.Context, r Request) (Reply, error) {
	req := a.request(r)
	rb, err := a.post(ctx, req)
	if err != nil {
		return Reply{}, err
	}
	answerTool := ""
	if r.Output != nil {
		answerTool = r.Output.name()
	}
	out := Reply{Model: req.Model, Backend: a.name, Usage: Usage{Requests: 1}}
	var (
		text, answer strings.Builder
		answered     bool
		calls        callBuilder
		reasoning    []json.RawMessage
	)
	textDelta := func(s string) {
		if s != "" && r.OnDelta != nil {
			r.OnDelta(Delta{Text: s})
		}
	}
	if !req.Stream || rb.json() {
		// Unstreamed, or a stream request answered with one JSON document.
		var rep amReply
		if err := rb.decode(&rep); err != nil {
			return Reply{}, err
		}
		if rep.Type == "error" || rep.Error != nil {
			if rep.Error == nil {
				rep.Error = &amError{}
			}
			return Reply{}, reportedError(rep.Error.Type, rep.Error.Message)
		}
		if rep.Content == nil {
			return Reply{}, rb.malformed("no content in the reply")
		}
		for i, b := range rep.Content {
			switch {
			case amReasoning(b.Type):
				reasoning = append(reasoning, b.raw)
			case b.Type == "text":
				text.WriteString(b.Text)
				textDelta(b.Text)
			case b.Type == "tool_use" && answerTool != "" && b.Name == answerTool && !answered:
				answer.Write(b.Input)
				answered = true
				textDelta(string(b.Input))
			case b.Type == "tool_use":
				calls.piece(i, true, b.ID, b.Name, string(b.Input), r.OnDelta)
			}
		}
		if rep.Model != "" {
			out.Model = rep.Model
		}
		out.StopReason = rep.StopReason
		out.Usage.PromptTokens, out.Usage.CompletionTokens = rep.Usage.prompt(), rep.Usage.OutputTokens
	} else {
		type block struct {
			kind   string // text, call, answer, thinking, or "" (skipped)
			start  json.RawMessage
			pieces bool
			// thinking and signature assemble a thinking block.
			thinking  strings.Builder
			signature strings.Builder
		}
		blocks := map[int]*block{}
		done := false
		err := rb.events(func(_ string, data []byte) (bool, error) {
			var ev amEvent
			if err := json.Unmarshal(data, &ev); err != nil {
				return false, rb.malformed("stream event is not JSON the provider's way: %v", err)
			}
			switch ev.Type {
			case "message_start":
				if m := ev.Message; m != nil {
					if m.Model != "" {
						out.Model = m.Model
					}
					out.Usage.PromptTokens, out.Usage.CompletionTokens = m.Usage.prompt(), m.Usage.OutputTokens
				}
			case "content_block_start":
				cb := ev.ContentBlock
				if cb == nil {
					return true, nil
				}
				b := &block{}
				blocks[ev.Index] = b
				switch {
				case cb.Type == "thinking":
					b.kind = "thinking"
					b.thinking.WriteString(cb.Thinking)
				case cb.Type == "redacted_thinking":
					reasoning = append(reasoning, cb.raw)
				case cb.Type == "text":
					b.kind = "text"
					text.WriteString(cb.Text)
					textDelta(cb.Text)
				case cb.Type == "tool_use" && answerTool != "" && cb.Name == answerTool && !answered:
					b.kind, b.start, answered = "answer", cb.Input, true
				case cb.Type == "tool_use":
					b.kind, b.start = "call", cb.Input
					calls.piece(ev.Index, true, cb.ID, cb.Name, "", r.OnDelta)
				}
			case "content_block_delta":
				b := blocks[ev.Index]
				if b == nil {
					// A text delta without its block start (a lenient
					// proxy): text all the same.
					b = &block{kind: "text"}
				}
				switch {
				case b.kind == "text" && ev.Delta.Type == "text_delta":
					text.WriteString(ev.Delta.Text)
					textDelta(ev.Delta.Text)
				case b.kind == "thinking" && ev.Delta.Type == "thinking_delta":
					b.thinking.WriteString(ev.Delta.Thinking)
				case b.kind == "thinking" && ev.Delta.Type == "signature_delta":
					b.signature.WriteString(ev.Delta.Signature)
				case b.kind == "answer" && ev.Delta.Type == "input_json_delta":
					answer.WriteString(ev.Delta.PartialJSON)
					textDelta(ev.Delta.PartialJSON)
					b.pieces = b.pieces || ev.Delta.PartialJSON != ""
				case b.kind == "call" && ev.Delta.Type == "input_json_delta":
					calls.piece(ev.Index, true, "", "", ev.Delta.PartialJSON, r.OnDelta)
					b.pieces = b.pieces || ev.Delta.PartialJSON != ""
				}
			case "content_block_stop":
				b := blocks[ev.Index]
				if b != nil && b.kind == "thinking" {
					reasoning = append(reasoning, mustJSON(struct {
						Type      string `json:"type"`
						Thinking  string `json:"thinking"`
						Signature string `json:"signature"`
					}{"thinking", b.thinking.String(), b.signature.String()}))
					return true, nil
				}
				// A block whose input came whole in its start, not in pieces.
				if b == nil || b.pieces || len(b.start) == 0 || bytes.Equal(bytes.TrimSpace(b.start), []byte("{}")) {
					return true, nil
				}
				switch b.kind {
				case "answer":
					answer.Write(b.start)
					textDelta(string(b.start))
				case "call":
					calls.piece(ev.Index, true, "", "", string(b.start), r.OnDelta)
				}
			case "message_delta":
				if ev.Delta.StopReason != "" {
					out.StopReason = ev.Delta.StopReason
				}
				if u := ev.Usage; u != nil {
					out.Usage.CompletionTokens = u.OutputTokens
					if p := u.prompt(); p > 0 {
						out.Usage.PromptTokens = p
					}
				}
			case "message_stop":
				done = true
				return false, nil
			case "error":
				if ev.Error == nil {
					ev.Error = &amError{}
				}
				return false, reportedError(ev.Error.Type, ev.Error.Message)
			}
			return true, nil
		})
		if err != nil {
			return Reply{}, err
		}
		if !done {
			return Reply{}, rb.malformed("stream ended before message_stop")
		}
	}
	out.Content = text.String()
	out.ToolCalls, out.NamelessCalls = calls.done()
	if len(reasoning) > 0 {
		out.Reasoning = mustJSON(reasoning)
	}
	out.FinishReason = amFinish(out.StopReason)
	if answered {
		out.Content = strings.TrimSpace(answer.String())
		if out.Content == "" {
			out.Content = "{}"
		}
		if len(out.ToolCalls) == 0 {
			out.FinishReason = FinishStop
		}
	}
	if len(out.ToolCalls) > 0 {
		out.FinishReason = FinishToolCalls
	}
	return out, nil
}
