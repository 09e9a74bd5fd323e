package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Role is the author of a chat message.
type Role string

// The chat roles.
const (
	// System messages instruct the model (constitution, prompt, peers).
	// Anthropic gets them all, joined in order, as the request's system
	// prompt wherever they stand; the other providers get them in place.
	System Role = "system"
	// User messages are what the agent receives.
	User Role = "user"
	// Assistant messages are what the model answered before: text, tool
	// calls (ToolCalls) or both.
	Assistant Role = "assistant"
	// Tool messages carry the result of one tool call back to the model:
	// ToolCallID names the call (an assistant message's ToolCalls[i].ID),
	// Content is the result.
	Tool Role = "tool"
)

// Message is one chat message.
//
// A conversation with tools alternates like this:
//
//	{Role: User, Content: "What is 6*7? And 2+2?"}
//	{Role: Assistant, ToolCalls: []ToolCall{
//		{ID: "c1", Name: "calculate", Arguments: json.RawMessage(`{"expr":"6*7"}`)},
//		{ID: "c2", Name: "calculate", Arguments: json.RawMessage(`{"expr":"2+2"}`)}}}
//	{Role: Tool, ToolCallID: "c1", ToolName: "calculate", Content: "42"}
//	{Role: Tool, ToolCallID: "c2", ToolName: "calculate", Content: "4"}
//	{Role: Assistant, Content: "6*7 is 42 and 2+2 is 4."}
//
// Every call of an assistant message must be answered by a Tool message
// before the next user or assistant message, and every Tool message must
// answer a call made before it (Request.Validate checks both: providers
// refuse a conversation that breaks either rule).
type Message struct {
	// Role is the author.
	Role Role
	// Content is the text. For a Tool message it is the tool's result (a
	// string the model reads; JSON or prose alike).
	Content string
	// ToolCalls are the calls an assistant message made (Role Assistant
	// only), exactly as the Reply that made them returned them.
	ToolCalls []ToolCall
	// ToolCallID binds a Tool message to the call it answers.
	ToolCallID string
	// ToolName names the tool whose result a Tool message carries (ollama
	// binds results by name, not id; the others ignore it).
	ToolName string
	// IsError marks a Tool message's result as a failure. Anthropic gets it
	// as the tool_result's is_error; the other providers have no such flag,
	// so a failed result's text is sent beginning "Error: ".
	IsError bool
	// Reasoning is an Assistant message's Reply.Reasoning, sent back as it
	// came, before the message's tool calls (anthropic only; the other
	// providers have no place for it).
	Reasoning json.RawMessage
}

// Request is one chat completion request.
type Request struct {
	// Model is the model asked for; "" lets each backend use its own default.
	Model string
	// Messages are sent in order.
	Messages []Message
	// MaxTokens caps the completion (0: the provider's default; anthropic
	// requires one and gets 4096).
	MaxTokens int
	// Temperature is the sampling temperature; nil leaves the provider's.
	Temperature *float64

	// Tools are the functions the model may call. Their names must match
	// ^[a-zA-Z0-9_-]{1,64}$ and be distinct (every provider's rule).
	Tools []ToolSpec
	// ToolChoice says whether the model must, may or must not call a tool
	// (zero value: the model decides). See ToolChoice for how each provider
	// honours it.
	ToolChoice ToolChoice
	// ParallelToolCalls, when set, allows (true) or forbids (false) several
	// tool calls in one reply: openai/xai parallel_tool_calls, anthropic
	// disable_parallel_tool_use; ollama has no such switch. nil leaves the
	// provider's default (allowed everywhere).
	ParallelToolCalls *bool
	// Output, when set, asks for the answer as JSON matching a schema
	// (structured output). Reply.Content is then that JSON. See OutputSchema.
	Output *OutputSchema

	// OnDelta, when set, asks for a streamed reply and receives each piece
	// as it arrives (on the request's goroutine, in order): text deltas and
	// tool-call progress. The Reply still holds the whole answer. See Delta.
	OnDelta func(Delta)
	// Agent and Thread attribute the usage and the CallRecord (both
	// optional).
	Agent, Thread string
}

// FinishReason is why the model stopped, normalised across providers.
type FinishReason string

// The normalised finish reasons. Reply.StopReason keeps the provider's own
// word.
const (
	// FinishStop: the model finished its answer (openai stop, anthropic
	// end_turn or stop_sequence, ollama stop).
	FinishStop FinishReason = "stop"
	// FinishToolCalls: the model called tools and waits for their results.
	// Every reply with tool calls has this reason, whatever the provider said.
	FinishToolCalls FinishReason = "tool_calls"
	// FinishLength: the answer was cut at max_tokens or the context window
	// (openai length, anthropic max_tokens or model_context_window_exceeded,
	// ollama length).
	FinishLength FinishReason = "length"
	// FinishContentFilter: the provider withheld or cut the answer.
	FinishContentFilter FinishReason = "content_filter"
	// FinishRefusal: the model declined (openai refusal, anthropic refusal);
	// Reply.Content holds its explanation.
	FinishRefusal FinishReason = "refusal"
	// FinishOther: any other reason (see Reply.StopReason).
	FinishOther FinishReason = "other"
)

// Reply is a completed chat request.
type Reply struct {
	// Content is the model's text: its answer, or with Request.Output the
	// JSON answer (on anthropic the forced tool's input, serialised). It may
	// be empty when the model only called tools.
	Content string
	// ToolCalls are the calls the model made, in the order it made them
	// (several when it calls in parallel). Run them, then send this reply
	// back as an Assistant message with these ToolCalls, followed by one
	// Tool message per call.
	ToolCalls []ToolCall
	// NamelessCalls counts the tool calls the model made without a function
	// name, left out of ToolCalls: nothing can run them, and no provider
	// takes them back in the conversation.
	NamelessCalls int
	// Model is the model that answered.
	Model string
	// Backend names the backend that answered.
	Backend string
	// FinishReason is why the model stopped, normalised.
	FinishReason FinishReason
	// StopReason is the provider's own word for it ("end_turn", "stop", …;
	// "" when it gave none).
	StopReason string
	// Usage is the request's token usage (Requests is 1).
	Usage Usage
	// Duration is how long the call took, waits for the backend's limits
	// included; FirstToken how long until the first streamed delta (0 when
	// not streamed).
	Duration, FirstToken time.Duration
	// Reasoning holds the reply's reasoning blocks as a JSON array, exactly
	// as the provider sent them, to be sent back with the reply (nil: none):
	// anthropic's thinking blocks (with their signatures) and
	// redacted_thinking blocks, which the Messages API wants back unchanged
	// when the conversation goes on after tool use. Their text is never
	// part of Content nor streamed.
	Reasoning json.RawMessage
}

// Message returns the reply as the Assistant message that continues the
// conversation: its text, its tool calls and its reasoning blocks.
func (r Reply) Message() Message {
	return Message{Role: Assistant, Content: r.Content, ToolCalls: r.ToolCalls, Reasoning: r.Reasoning}
}

// estimateTokens is the bucket's estimate of a request: about four characters
// a token, plus the completion it may produce.
func estimateTokens(r Request) int {
	return inputTokens(r) + max(r.MaxTokens, 0)
}

// inputTokens estimates the tokens of what r sends (4 bytes a token).
func inputTokens(r Request) int {
	n := 0
	for _, m := range r.Messages {
		n += len(m.Content)
		for _, c := range m.ToolCalls {
			n += len(c.Name) + len(c.Arguments)
		}
	}
	for _, t := range r.Tools {
		n += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	if r.Output != nil {
		n += len(r.Output.Schema)
	}
	return n/4 + 1
}

// outputTokens estimates the tokens of what rep says (4 bytes a token).
func outputTokens(rep Reply) int {
	n := len(rep.Content)
	for _, c := range rep.ToolCalls {
		n += len(c.Name) + len(c.Arguments)
	}
	return n/4 + 1
}

// Validate reports what makes the request one no provider would accept: a
// tool name outside ^[a-zA-Z0-9_-]{1,64}$ or used twice, parameters or an
// output schema that are not JSON objects, a tool choice naming no offered
// tool, an unknown role, a tool call without id, a Tool message answering no
// earlier call, or calls left without results before the next message. The
// error wraps ErrInvalidRequest; Router.Chat checks it before any attempt.
func (r Request) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidRequest, fmt.Sprintf(format, a...))
	}
	names := make(map[string]bool, len(r.Tools))
	for i, t := range r.Tools {
		if !toolName.MatchString(t.Name) {
			return bad("tools[%d]: name %q must match ^[a-zA-Z0-9_-]{1,64}$", i, t.Name)
		}
		if names[t.Name] {
			return bad("tools[%d]: name %q is offered twice", i, t.Name)
		}
		names[t.Name] = true
		if p := bytes.TrimSpace(t.Parameters); len(p) > 0 && !isJSONObject(p) {
			return bad("tools[%d] (%s): parameters must be a JSON Schema object", i, t.Name)
		}
	}
	switch r.ToolChoice.Mode {
	case ToolAuto, ToolNone:
	case ToolRequired:
		if len(r.Tools) == 0 {
			return bad("tool choice required without tools")
		}
	case ToolNamed:
		if !names[r.ToolChoice.Name] {
			return bad("tool choice names %q, which is not among the tools offered", r.ToolChoice.Name)
		}
	default:
		return bad("unknown tool choice mode %q (want auto, none, required or named)", r.ToolChoice.Mode)
	}
	if o := r.Output; o != nil {
		if !toolName.MatchString(o.name()) {
			return bad("output schema name %q must match ^[a-zA-Z0-9_-]{1,64}$", o.Name)
		}
		if names[o.name()] {
			return bad("output schema name %q is also a tool's name", o.name())
		}
		if !isJSONObject(bytes.TrimSpace(o.Schema)) {
			return bad("output schema must be a JSON Schema object")
		}
	}
	var pending []string // calls of the last assistant message not yet answered
	open := map[string]bool{}
	made := map[string]bool{}
	unanswered := func(i int) error {
		if len(pending) == 0 {
			return nil
		}
		var left []string
		for _, id := range pending {
			if open[id] {
				left = append(left, strconv.Quote(id))
			}
		}
		if len(left) == 0 {
			pending = nil
			return nil
		}
		if i == len(r.Messages) {
			return bad("the conversation ends with tool call %s unanswered (answer every call with a tool message)",
				strings.Join(left, ", "))
		}
		return bad("messages[%d]: tool call %s has no result (answer every call with a tool message first)", i,
			strings.Join(left, ", "))
	}
	for i, m := range r.Messages {
		switch m.Role {
		case System, User:
			if err := unanswered(i); err != nil {
				return err
			}
		case Assistant:
			if err := unanswered(i); err != nil {
				return err
			}
			if len(m.ToolCalls) > 0 {
				pending = pending[:0]
			}
			for j, c := range m.ToolCalls {
				switch {
				case c.ID == "":
					return bad("messages[%d].tool_calls[%d]: no id", i, j)
				case made[c.ID]:
					return bad("messages[%d].tool_calls[%d]: id %q used twice", i, j, c.ID)
				case c.Name == "":
					return bad("messages[%d].tool_calls[%d]: no name", i, j)
				}
				made[c.ID], open[c.ID] = true, true
				pending = append(pending, c.ID)
			}
		case Tool:
			switch {
			case open[m.ToolCallID]:
				delete(open, m.ToolCallID)
			case made[m.ToolCallID]:
				return bad("messages[%d]: a second result for tool call %q", i, m.ToolCallID)
			default:
				return bad("messages[%d]: tool result for %q, which no earlier assistant message called", i, m.ToolCallID)
			}
		default:
			return bad("messages[%d]: unknown role %q", i, m.Role)
		}
	}
	return unanswered(len(r.Messages))
}

// isJSONObject reports whether b is one JSON object (valid JSON that
// starts with '{'; checked without decoding it: tool schemas are checked on
// every request).
func isJSONObject(b []byte) bool {
	return len(b) > 0 && b[0] == '{' && json.Valid(b)
}
