package xmlpipe

// InputError is a handler's error about the message it was given — a field
// left empty, a value out of range — which the caller must fix, and whose
// text (Err's) is written for the caller. Return it, or wrap it with %w,
// and the sender's client is told that text beside the canned <huh> text
// (the bus's huh frames, an MCP tool error); errors.As finds it. Any other
// error of a handler, and its panics, reach only the log, the journal and
// the organism's operators: they may name URLs, paths or listeners the
// caller must not learn of. Err's text must therefore say nothing the
// caller may not know.
type InputError struct {
	// Err is what was wrong with the input; errors.Is sees through to it.
	Err error
}

// Error returns Err's text.
func (e *InputError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *InputError) Unwrap() error { return e.Err }
