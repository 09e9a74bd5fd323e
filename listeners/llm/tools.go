package llm

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// ToolSpec is one function offered to the model.
type ToolSpec struct {
	// Name is the function's name: ^[a-zA-Z0-9_-]{1,64}$ (the strictest
	// provider's rule; map other names reversibly before offering them).
	Name string
	// Description tells the model what the function does and when to call it.
	Description string
	// Parameters is the JSON Schema of the arguments object (nil: no
	// arguments, sent as an empty object schema).
	Parameters json.RawMessage
	// Strict asks openai/xai to hold the arguments to the schema exactly
	// (function.strict; the schema must then follow OpenAI's strict-mode
	// rules). The other providers ignore it.
	Strict bool
}

// ToolChoiceMode is how a request constrains the model's use of its tools.
type ToolChoiceMode string

// The tool choice modes.
const (
	// ToolAuto lets the model decide (the zero value; nothing is sent).
	ToolAuto ToolChoiceMode = ""
	// ToolNone forbids tool calls: openai/xai "none", anthropic {type:none};
	// ollama gets no tools at all.
	ToolNone ToolChoiceMode = "none"
	// ToolRequired makes the model call at least one tool: openai/xai
	// "required", anthropic {type:any}; ollama cannot be forced (the tools
	// are offered as with ToolAuto).
	ToolRequired ToolChoiceMode = "required"
	// ToolNamed makes the model call the tool ToolChoice.Name: openai/xai
	// {type:function,function:{name}}, anthropic {type:tool,name}; ollama is
	// offered that tool alone.
	ToolNamed ToolChoiceMode = "named"
)

// ToolChoice constrains the model's use of the request's tools. The zero
// value lets the model decide.
type ToolChoice struct {
	// Mode is auto (""), none, required or named.
	Mode ToolChoiceMode
	// Name is the tool a ToolNamed choice forces.
	Name string
}

// UseTool returns the choice that forces the tool name.
func UseTool(name string) ToolChoice { return ToolChoice{Mode: ToolNamed, Name: name} }

// DefaultOutputName is the name of an OutputSchema that gives none.
const DefaultOutputName = "response"

// OutputSchema asks for the answer as JSON that matches Schema (structured
// output): openai/xai response_format {type:json_schema}, ollama format (the
// schema); anthropic has no such field, so the answer is a forced tool named
// Name whose input is the answer — the tool is added to the request's tools
// and tool_choice becomes {type:tool,name:Name} (or {type:any} when the
// request offers other tools the model may call first, {type:tool} of the
// named tool for ToolNamed). Either way Reply.Content is the JSON answer and
// the forced tool never appears in Reply.ToolCalls.
//
// The JSON is what the model wrote, checked as JSON only: validate it
// against the schema before use.
type OutputSchema struct {
	// Name names the schema (openai json_schema.name, the anthropic tool):
	// ^[a-zA-Z0-9_-]{1,64}$, DefaultOutputName when "".
	Name string
	// Description says what the answer is (sent where the provider has a
	// place for it).
	Description string
	// Schema is the JSON Schema of the answer: an object schema.
	Schema json.RawMessage
	// Strict asks openai/xai to hold the answer to the schema exactly
	// (json_schema.strict).
	Strict bool
}

// name returns the schema's name or the default.
func (o *OutputSchema) name() string {
	if o.Name == "" {
		return DefaultOutputName
	}
	return o.Name
}

// ToolCall is one call the model made.
type ToolCall struct {
	// ID binds the call's result (Message.ToolCallID). Providers that give
	// none (ollama, some OpenAI-compatible servers) get a stable one minted
	// from the call's position, name and arguments ("call_" and 24 hex
	// digits), so the same reply always yields the same ids.
	ID string
	// Name is the function the model called (as it wrote it: it may name no
	// offered tool).
	Name string
	// Arguments are the arguments exactly as the model wrote them: a JSON
	// object when Err is nil ("{}" when the model wrote nothing). When Err
	// is set they are the raw text, not valid JSON — pass them back in the
	// Assistant message unchanged, but never embed them in JSON as is.
	Arguments json.RawMessage
	// Err is set when Arguments are not a JSON object (it wraps
	// ErrBadArguments and says why, e.g. "arguments are not valid JSON:
	// unexpected end of JSON input"): answer the call with a Tool message
	// quoting it, so the model corrects itself.
	Err error
	// Extra is what an OpenAI-compatible server sent beside the call in
	// extra_content (Gemini's thought signature), sent back with the call
	// as it came (nil: nothing).
	Extra json.RawMessage
}

// ErrBadArguments marks a tool call whose arguments are not a JSON object.
var ErrBadArguments = errors.New("arguments are not a JSON object")

// newToolCall returns the call with its arguments checked.
func newToolCall(id, name string, args []byte) ToolCall {
	args = bytes.TrimSpace(args)
	if len(args) == 0 {
		args = []byte("{}")
	}
	c := ToolCall{ID: id, Name: name, Arguments: json.RawMessage(bytes.Clone(args))}
	c.Err = checkArguments(args)
	return c
}

// checkArguments reports why args are not a JSON object, or nil.
func checkArguments(args []byte) error {
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return fmt.Errorf("%w: arguments are not valid JSON: %w", ErrBadArguments, err)
	}
	if _, ok := v.(map[string]any); !ok {
		return fmt.Errorf("%w: got %s", ErrBadArguments, jsonKind(v))
	}
	return nil
}

// jsonKind names the kind of a decoded JSON value.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	}
	return "an object"
}

// objectArguments returns a call's arguments as a JSON object for providers
// that take an object (anthropic input, ollama arguments): arguments that
// are not one become {}.
func objectArguments(c ToolCall) json.RawMessage {
	if c.Err != nil || checkArguments(c.Arguments) != nil {
		return json.RawMessage("{}")
	}
	return c.Arguments
}

// textArguments returns a call's arguments as the string openai/xai take:
// as the model wrote them.
func textArguments(c ToolCall) string {
	if len(c.Arguments) == 0 {
		return "{}"
	}
	return string(c.Arguments)
}

// mintCallID returns a stable id for the i-th call of a reply that gave none.
func mintCallID(i int, name string, args []byte) string {
	h := sha256.New()
	h.Write([]byte(strconv.Itoa(i)))
	h.Write([]byte{0})
	h.Write([]byte(name))
	h.Write([]byte{0})
	h.Write(args)
	return "call_" + hex.EncodeToString(h.Sum(nil)[:12])
}

// finishCalls gives every call without an id (or with one an earlier call
// of the reply already has) a minted one.
func finishCalls(calls []ToolCall) []ToolCall {
	seen := make(map[string]bool, len(calls))
	for i := range calls {
		c := &calls[i]
		if c.ID == "" || seen[c.ID] {
			c.ID = mintCallID(i, c.Name, c.Arguments)
		}
		seen[c.ID] = true
	}
	return calls
}

// toolName is every provider's rule for function names.
var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// emptyObjectSchema is the parameters of a tool without arguments.
var emptyObjectSchema = json.RawMessage(`{"type":"object","properties":{}}`)

// parameters returns a tool's parameters schema, the empty object schema
// when it has none.
func (t ToolSpec) parameters() json.RawMessage {
	if len(bytes.TrimSpace(t.Parameters)) == 0 {
		return emptyObjectSchema
	}
	return t.Parameters
}

// callBuilder assembles the tool calls of a stream from their pieces, keyed
// by the provider's index (openai tool_calls[].index, anthropic content
// block index).
type callBuilder struct {
	calls []*partialCall
	byKey map[int]int // provider key → position in calls
	last  int         // position of the call the last piece went to
}

// partialCall is a call being streamed.
type partialCall struct {
	id, name string
	args     bytes.Buffer
	extra    json.RawMessage
}

// piece adds one piece of the call under key (hasKey false: the provider
// gave no index). A piece with an id other than the one already under its
// key starts a new call: some OpenAI-compatible servers number every
// parallel call 0 and tell them apart by id only. The piece is passed on to
// onDelta (nil: not streamed).
func (b *callBuilder) piece(key int, hasKey bool, id, name, args string, onDelta func(Delta)) {
	if b.byKey == nil {
		b.byKey = map[int]int{}
	}
	pos, ok := -1, false
	if hasKey {
		pos, ok = b.byKey[key]
	} else if n := len(b.calls); n > 0 {
		pos, ok = n-1, true
	}
	if ok && id != "" && b.calls[pos].id != "" && b.calls[pos].id != id {
		ok = false
	}
	fresh := !ok
	if fresh {
		pos = len(b.calls)
		b.calls = append(b.calls, &partialCall{})
		if hasKey {
			b.byKey[key] = pos
		}
	}
	b.last = pos
	c := b.calls[pos]
	if c.id == "" {
		c.id = id
	}
	if c.name == "" {
		c.name = name
	}
	c.args.WriteString(args)
	if onDelta != nil && (fresh || args != "") {
		d := &ToolCallDelta{Index: pos, Arguments: args}
		if fresh {
			d.ID, d.Name = id, name
		}
		onDelta(Delta{ToolCall: d})
	}
}

// extra sets the extra_content of the call the last piece went to (a
// later one replaces it).
func (b *callBuilder) extra(raw json.RawMessage) {
	if len(b.calls) > 0 && len(raw) > 0 && string(raw) != "null" {
		b.calls[b.last].extra = bytes.Clone(raw)
	}
}

// done returns the assembled calls, checked, with ids minted where missing,
// and how many calls never got a name. Those are left out: nothing can run
// them, and no provider would take them back in the conversation.
func (b *callBuilder) done() (calls []ToolCall, nameless int) {
	for _, c := range b.calls {
		if c.name == "" {
			nameless++
			continue
		}
		tc := newToolCall(c.id, c.name, c.args.Bytes())
		tc.Extra = c.extra
		calls = append(calls, tc)
	}
	return finishCalls(calls), nameless
}

// resultText is a Tool message's content for the providers that have no
// error flag on a tool result (openai/xai, ollama): a failed call's result
// begins "Error: " — unless it already does — so the model reads it as a
// failure, not as the tool's answer.
func resultText(m Message) string {
	if !m.IsError {
		return m.Content
	}
	if m.Content == "" {
		return "Error: the call failed"
	}
	if len(m.Content) >= 5 && strings.EqualFold(m.Content[:5], "error") {
		return m.Content
	}
	return "Error: " + m.Content
}
