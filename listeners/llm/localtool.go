package llm

import (
	"context"
	"encoding/json"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// LocalTool is a function the agent loop answers itself, without a round
// trip through the pump: memory (remember, recall), context control
// (context_unfold), loop control (AEIOU) — whatever needs the agent's own
// state rather than another listener. It is offered to the model beside the
// agent's peers, under its own name (which a peer's function never takes),
// and its result is kept in the conversation like any tool result, so it
// survives a restart.
//
// A local tool may also answer by sending a message instead (route: a
// message to a peer chosen at run time): its result is then the answer to
// that message, which comes back like any peer's.
type LocalTool struct {
	// Spec is the function offered: a name matching ^[a-zA-Z0-9_-]{1,64}$,
	// a description and the JSON Schema of its arguments.
	Spec ToolSpec
	// Call runs the tool. It runs on the agent's handler goroutine, with
	// the conversation's other handling held off (one thinker per
	// conversation): it may read and write the conversation's state, and
	// should be quick. An error is the call's result, marked failed, so the
	// model can correct itself.
	Call func(ctx context.Context, c LocalCall) (LocalResult, error)
	// Sends names listeners the tool sends to (LocalResult.Send) that the
	// model must not call on its own: peers the agent has for this tool
	// only (the memory listener, say). They are not offered as functions.
	Sends []string
	// Once makes identical calls of the tool in one model reply — the same
	// arguments, as JSON values — one call: the first is made, each repeat
	// answered at once that it was (a model that writes remember twice
	// stores one memory).
	Once bool
}

// LocalCall is one call of a local tool.
type LocalCall struct {
	// Agent is the calling agent's name, Thread the conversation's thread.
	Agent, Thread string
	// ID is the call's id (the model's, or one the agent minted).
	ID string
	// Arguments is the JSON object the model wrote.
	Arguments json.RawMessage
	// Metadata is what the agent's handler got with the message that led to
	// this model call.
	Metadata xmlpipe.Metadata
}

// LocalResult is what a local tool answers.
type LocalResult struct {
	// Content is the result the model reads (text or JSON).
	Content string
	// IsError marks a failed call.
	IsError bool
	// Send, when set, makes the result the answer to this message instead:
	// the agent sends it (its Ref is set to the call's id; the peers list
	// applies) and the answer, or the error about it, becomes the call's
	// result.
	Send *xmlpipe.SendResponse
}
