package xmlpipe

import "context"

// SettleKey is the context key under which a handler call's context holds
// what Settle sets: a value with a Settle(bool) method, and — for
// MessageSeq — a MessageSeq() int64 method. The pump puts its handling
// there (one context value serves its own lookups too); a test or another
// host of handlers may put its own.
type SettleKey struct{}

// Settle says whether what the handler returns is its message's outcome
// even when an operator's halt cancels ctx (cause ErrHalted) before it
// returns. A handler that keeps state of its own (an agent's history)
// settles once it has recorded a step whose effects its response carries:
// dropping the response and handling the message again would find the
// step recorded but never sent. It unsettles (false) before work a halt
// should hold (a model call): a halted handling that is not settled
// produces nothing and its message is handled again after the resume, as
// ErrHalted says. A kill, a timeout or a shutdown ends a handling as they
// do whether it is settled or not. Without a settler in ctx (SettleKey; a
// handler called outside the pump) Settle does nothing.
func Settle(ctx context.Context, settled bool) {
	if s, ok := ctx.Value(SettleKey{}).(interface{ Settle(bool) }); ok {
		s.Settle(settled)
	}
}
