// Package asked carries, in the context of an Ask, whom to tell the
// conversation's id once its first message was accepted: the pump tells,
// the organism's OnConversation option listens. It lets a caller cancel or
// kill a conversation while its Ask still waits, without a public hook on
// the pump.
package asked

import "context"

// key is the context key of the callback.
type key struct{}

// WithAccepted returns ctx carrying fn, which Accepted calls.
func WithAccepted(ctx context.Context, fn func(conversation string)) context.Context {
	if fn == nil {
		return ctx
	}
	return context.WithValue(ctx, key{}, fn)
}

// Accepted calls the callback ctx carries, if any, with conversation.
func Accepted(ctx context.Context, conversation string) {
	if fn, ok := ctx.Value(key{}).(func(string)); ok {
		fn(conversation)
	}
}

// keepKey is the context key of KeepOnCancel.
type keepKey struct{}

// WithKeep returns ctx marked: an Ask under it whose context ends stops
// waiting and leaves its conversation running.
func WithKeep(ctx context.Context) context.Context {
	return context.WithValue(ctx, keepKey{}, true)
}

// Keep reports whether ctx is marked by WithKeep.
func Keep(ctx context.Context) bool {
	keep, _ := ctx.Value(keepKey{}).(bool)
	return keep
}
