package federation

import (
	"bytes"
	"context"
	"errors"

	"github.com/xml-pipeline/xmlpipe/pump"
)

// parkedAnswer is a call whose handling a halt stopped, kept in memory
// for the handling of the same message after Unhalt, which finds it — by
// the id it computes again (takeParked), or for a call with a random link
// thread by its thread and payload digest (takeParkedByDigest) — instead
// of calling the peer a second time. It holds the answer, with what
// acknowledges it to the peer, when the answer came before the halt
// stopped the handling (park); none (e nil) when the halt stopped the wait
// (holdCall): the call is left open, and the answer is parked here when it
// comes (handHeld), or the peer's refusal (err).
type parkedAnswer struct {
	o      opened
	thread string // the caller's thread
	e      *envelope
	ack    func()
	err    error // the peer refused the call held open
}

// maxParked bounds gateway.parked: past it, an answer of a halted handling
// is dropped (acknowledged, its call forgotten), a call whose wait a halt
// stopped is cancelled, and the next handling of its message calls anew.
const maxParked = 1024

// holdCall takes c, the call o the handling on the caller's thread waits
// on, out of pending as a halt stops that wait (the caller checked that
// the handling runs again: rerun). An answer handed over meanwhile is
// returned (came), for park. Otherwise the call stays open for the next
// handling of the same message (held): the peer goes on with it, and its
// answer is parked when it comes (handHeld) or handed to that handling,
// which waits on the same call rather than calling anew — a cancel and a
// new call would run the peer's listener twice when it finished the first
// before the cancel came. The call is not held when its thread ended
// already or maxParked calls are kept: the caller cancels it then. The
// thread is checked under g.mu, so that one ending from now on finds the
// call held (endParked).
func (g *gateway) holdCall(o opened, c *call, thread string) (a answered, came, held bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.pending[o.lt] == c {
		delete(g.pending, o.lt)
	}
	select {
	case a = <-c.answer: // handed over as the wait ended: out of pending, nothing more comes
		return a, true, false
	default:
	}
	if len(g.parked) >= maxParked || !g.m.opts.Pump.Threads().Known(thread) {
		return answered{}, false, false
	}
	g.parked[o.lt] = &parkedAnswer{o: o, thread: thread}
	return answered{}, false, true
}

// handHeld parks a, the answer to call ref, when a halt stopped the wait
// of the handling that made it (holdCall), and reports whether it did;
// with g.mu held.
func (g *gateway) handHeld(ref string, a answered) bool {
	p := g.parked[ref]
	if p == nil || p.e != nil {
		return false
	}
	p.e, p.ack = a.e, a.ack
	return true
}

// refuseHeld records the peer's refusal of call ref held open for the next
// handling of its message (holdCall), which returns it, and reports
// whether it did; with g.mu held.
func (g *gateway) refuseHeld(ref string, err error) bool {
	p := g.parked[ref]
	if p == nil || p.e != nil {
		return false
	}
	p.err = err
	return true
}

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
// may run again: not when it was killed, timed out or its answer was
// cancelled (pump.Cancel: the console's /cancel) — the pump drops its
// message, or answers it with a <huh> — so its call is cancelled on the
// peer rather than held open for a handling that never comes.
func rerun(ctx context.Context) bool {
	cause := context.Cause(ctx)
	return !errors.Is(cause, pump.ErrConversationKilled) && !errors.Is(cause, pump.ErrHandlerTimeout) &&
		!errors.Is(cause, pump.ErrCancelled)
}

// resume hands p, a call a halt stopped the handling of, to c, the
// handling of the same message after Unhalt: its answer, or the call
// itself to wait on when it is held open (its refusal, if one came, handed
// over); with g.mu held, which it releases.
func (g *gateway) resume(p *parkedAnswer, c *call, callerThread string) opened {
	if p.e != nil {
		g.mu.Unlock()
		g.log.Info("federation: the message handled again after a halt takes its call's answer", "call", p.o.lt)
		p.o.early, p.o.ack = p.e, p.ack
		return p.o
	}
	g.pending[p.o.lt] = c
	g.byThread[callerThread] = p.o.lt
	if p.err != nil {
		c.refused <- p.err
	}
	g.mu.Unlock()
	g.log.Info("federation: the message handled again after a halt waits on its call", "call", p.o.lt)
	return p.o
}

// takeParkedByDigest takes a call with a random link thread that a halt
// stopped the handling of, made from callerThread with digest (callDigest),
// if there is one; with g.mu held. Two such calls of the same payload from
// the same thread are interchangeable, as their adoption after a restart
// makes them.
func (g *gateway) takeParkedByDigest(callerThread string, digest []byte) *parkedAnswer {
	for lt, p := range g.parked {
		if p.o.digest != nil && p.thread == callerThread && bytes.Equal(p.o.digest, digest) {
			delete(g.parked, lt)
			return p
		}
	}
	return nil
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
// which ended (nothing will take them: the peer may delete them), cancels
// the calls held open for them, and forgets their calls.
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
		if p.e == nil { // held open: the peer need not go on with it
			g.log.Info("federation: the caller's thread ended; the call held for its next handling is cancelled",
				"call", p.o.lt, "thread", p.thread)
			g.cancel(p.o.lt)
		} else {
			g.log.Info("federation: the caller's thread ended; the answer kept for its next handling is dropped",
				"call", p.o.lt, "thread", p.thread)
			p.ack()
		}
		g.forgetCall(p.o)
	}
}
