package xmlpipe

import (
	"context"
	"sync/atomic"
)

// Settling is what a handler call's context carries for Settle: whether the
// handling is settled. The pump puts one in every handler call's context
// (WithSettling) and reads it once the handler returned.
type Settling struct{ v atomic.Bool }

// Settled reports whether the handler last called Settle with true.
func (s *Settling) Settled() bool { return s != nil && s.v.Load() }

// settlingKey is the context key of a handler call's Settling.
type settlingKey struct{}

// WithSettling returns ctx carrying s, for Settle.
func WithSettling(ctx context.Context, s *Settling) context.Context {
	return context.WithValue(ctx, settlingKey{}, s)
}

// Settle says whether what the handler returns is its message's outcome
// even when an operator's halt cancels ctx (cause ErrHalted) before it
// returns. A handler that keeps state of its own (an agent's history)
// settles once it has recorded a step whose effects its response carries:
// dropping the response and handling the message again would find the
// step recorded but never sent. It unsettles (false) before work a halt
// should hold (a model call): a halted handling that is not settled
// produces nothing and its message is handled again after the resume, as
// ErrHalted says. A kill, a timeout or a shutdown ends a handling as they
// do whether it is settled or not. Without a Settling in ctx (a handler
// called outside the pump) Settle does nothing.
func Settle(ctx context.Context, settled bool) {
	if s, ok := ctx.Value(settlingKey{}).(*Settling); ok && s != nil {
		s.v.Store(settled)
	}
}
