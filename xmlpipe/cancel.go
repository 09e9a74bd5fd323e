package xmlpipe

import "errors"

// ErrConversationKilled is the cause (context.Cause) of a handler's context
// when its conversation was killed (an operator's kill, a budget): nobody
// takes the handler's answer any more, so a handler that notices it may
// stop without one. The pump's pump.ErrConversationKilled is this error.
var ErrConversationKilled = errors.New("pump: conversation killed")

// ErrHalted is the cause (context.Cause) of a handler's context when an
// operator's emergency halt stopped it: what the handler answers is
// dropped, and its message is handled again, from its start, after the
// resume. A handler that notices it should stop without an answer and
// leave no trace of the interrupted handling (the next one is its first as
// far as the conversation is concerned), or — when the halt finds the
// handling settled (Settle) — finish it: its answer is then processed. The
// pump's pump.ErrHalted is this error.
var ErrHalted = errors.New("pump: halted")

// ErrHandlerTimeout is the cause (context.Cause) of a handler's context
// when its listener's timeout fired; the cause wraps it with the listener
// and the duration ("listener run_command: handler timeout 2m0s"). The
// sender gets a <huh>. The pump's pump.ErrHandlerTimeout is this error.
var ErrHandlerTimeout = errors.New("handler timeout")

// ErrShutdown is the cause (context.Cause) of a handler's context when the
// organism shuts down under it: an immediate shutdown, or a graceful one
// whose drain timed out (that cause wraps it). Its message is handled again
// after a restart. The pump's pump.ErrShutdown is this error.
var ErrShutdown = errors.New("pump: immediate shutdown")

// ErrCancelled is the cause (context.Cause) of a handler's context when
// its conversation's answer in flight was cancelled (an operator's or the
// console user's cancel): nobody takes the handler's answer any more, but
// unlike a kill the conversation goes on — its owner may continue it, and
// the handler's next message of it may follow this one. A handler that
// notices it should stop without an answer, leaving what it keeps of the
// conversation consistent (an agent notes the cancel in its history). The
// pump's pump.ErrCancelled is this error.
var ErrCancelled = errors.New("pump: answer cancelled")

// CancelMarkType is the PayloadType of the history slot the pump records on
// every live thread of a conversation whose answer in flight was cancelled
// (Pump.Cancel), before it stops any of the conversation's work: From and
// To are empty, Raw says "answer cancelled". It is durable like any slot. A listener that keeps in
// the history the calls it waits for (an agent's tool calls) reads it as
// "whatever was pending before this point never comes": the cancel dropped
// the work that would have answered it, and its handler, not running then,
// was never told.
const CancelMarkType = "xmlpipe.cancelled"
