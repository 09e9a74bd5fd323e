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
//
// A DeliveryGate (SetGate; the organism's guardian and approvals) sees every
// message about to be queued to a listener: it lets it through, refuses it
// — the sender gets a structured <refusal> the way it would get a <huh>,
// and the message counts as delivered — or holds it for a human. A held
// message is no work in flight (a drain does not wait for it) but keeps its
// conversation running and its journal record undelivered, so after a
// restart Recover re-delivers it and the gate holds it again; Release
// delivers it, RefuseHeld refuses it, and Kill drops it (telling the gate).
package pump
