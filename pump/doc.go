// Package pump is the organism's message pump: ingress workers run every envelope
// through the xmlpipe stages, the routing table resolves targets (by <to> or by
// payload root tag, broadcast groups concurrently), each listener owns a bounded
// pipeline with its own workers, and handler responses re-enter the full chain
// with <from> and <thread> injected from the private thread registry.
//
// Every failure becomes a <huh> to the sender (an external outlet or the
// listener's optional error handler); nothing is silently dropped.
//
// Every handler call has a context of its own, cancelled — context.Cause
// says why — when its conversation is killed (ErrConversationKilled), its
// listener's timeout fires (ErrHandlerTimeout), Halt stops its listener
// (ErrHalted) or the pump stops at once (ErrShutdown); a handler that
// ignores the cancellation is abandoned after Options.CancelGrace. The
// global handler slots are shared fairly between listeners, and external
// messages are admitted against a budget shared per listener and per user
// that answers ErrBusy within a bounded wait instead of blocking (see
// Options).
package pump
