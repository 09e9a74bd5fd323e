package federation

import (
	"context"
	"errors"

	"github.com/xml-pipeline/xmlpipe/pump"
)

// parkedAnswer is the answer to a call named by its message (openByID)
// whose handling a halt stopped after the answer came: kept in memory, with
// what acknowledges it to the peer, for the handling of the same message
// after Unhalt, which computes the same call id and takes it (takeParked)
// instead of calling the peer a second time.
type parkedAnswer struct {
	o      opened
	thread string // the caller's thread
	e      *envelope
	ack    func()
}

// maxParked bounds gateway.parked: past it, an answer of a halted handling
// is dropped (acknowledged, its call forgotten) and the next handling of
// its message calls anew.
const maxParked = 1024

// park keeps the answer e (acknowledged by ack) of call o, which the
// handling of ctx on the caller's thread took or was handed as a halt
// stopped it, for the next handling of the same message. The call stays
// claimed, its record kept and the answer unacknowledged until that
// handling's output carrying it is journaled, or the caller's thread ends
// (threadsEnded), or — at the gateway's close — until the restart, whose
// adoption the peer's resend of the answer answers.
//
// The answer is dropped instead — acknowledged, its call forgotten, and
// the message's next handling (if any) made to call anew — when no such
// handling comes: the handling was killed or timed out, its thread ended
// already, or the gateway holds maxParked answers. The thread is checked
// under g.mu, so that one ending from now on finds the answer parked.
func (g *gateway) park(ctx context.Context, o opened, thread string, e *envelope, ack func()) {
	g.mu.Lock()
	full := len(g.parked) >= maxParked
	keep := rerun(ctx) && !full && g.m.opts.Pump.Threads().Known(thread)
	if keep {
		g.parked[o.lt] = &parkedAnswer{o: o, thread: thread, e: e, ack: ack}
	}
	g.mu.Unlock()
	if keep {
		g.log.Info("federation: answer of a halted handling kept for its next handling", "call", o.lt, "thread", thread)
		return
	}
	if full {
		g.log.Warn("federation: too many answers of halted handlings kept; this one is dropped and its message calls anew",
			"call", o.lt, "thread", thread, "kept", maxParked)
	}
	ack()
	g.retry(o)
	g.forgetCall(o)
}

// rerun reports whether the handling of ctx, stopped before it answered,
// may run again: not when it was killed or timed out (the pump drops its
// message, or answers it with a <huh>).
func rerun(ctx context.Context) bool {
	cause := context.Cause(ctx)
	return !errors.Is(cause, pump.ErrConversationKilled) && !errors.Is(cause, pump.ErrHandlerTimeout)
}

// takeParked takes the answer parked for call lt, if there is one; with
// g.mu held.
func (g *gateway) takeParked(lt string) *parkedAnswer {
	p := g.parked[lt]
	if p != nil {
		delete(g.parked, lt)
	}
	return p
}

// endParked acknowledges the answers parked for the callers' threads ids,
// which ended (nothing will take them: the peer may delete them), and
// forgets their calls.
func (g *gateway) endParked(ids []string) {
	g.mu.Lock()
	if len(g.parked) == 0 {
		g.mu.Unlock()
		return
	}
	ended := make(map[string]bool, len(ids))
	for _, id := range ids {
		ended[id] = true
	}
	var done []*parkedAnswer
	for lt, p := range g.parked {
		if ended[p.thread] {
			delete(g.parked, lt)
			done = append(done, p)
		}
	}
	g.mu.Unlock()
	for _, p := range done {
		g.log.Info("federation: the caller's thread ended; the answer kept for its next handling is dropped",
			"call", p.o.lt, "thread", p.thread)
		p.ack()
		g.forgetCall(p.o)
	}
}
