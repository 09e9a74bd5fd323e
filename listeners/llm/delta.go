package llm

// Delta is one piece of a streamed reply, handed to Request.OnDelta as it
// arrives. Exactly one of Text, ToolCall and Restart is set.
//
// Text pieces concatenate to Reply.Content (with Request.Output: the JSON
// answer, on anthropic the forced tool's input). Tool-call pieces let a UI
// show "calling calculate…" while the arguments are still being written;
// the assembled, checked calls are in Reply.ToolCalls — act on those, never
// on the pieces.
type Delta struct {
	// Text is the next piece of the answer's text.
	Text string
	// ToolCall is progress of one tool call.
	ToolCall *ToolCallDelta
	// Restart says the pieces streamed so far are void: the attempt that
	// sent them failed and the Router tries again (perhaps on another
	// backend), whose pieces follow.
	Restart bool
}

// ToolCallDelta is progress of one tool call in a stream.
type ToolCallDelta struct {
	// Index numbers the stream's calls in the order they started: the
	// call's position in Reply.ToolCalls (unless a call that never got a
	// name was left out before it).
	Index int
	// ID and Name are set on the call's first piece (ID is "" when the
	// provider gives none; Reply.ToolCalls has the minted one).
	ID, Name string
	// Arguments is the next piece of the arguments text ("" on a piece
	// that only announces the call). Ollama sends a call whole: one piece
	// with ID, Name and all the arguments.
	Arguments string
}
