package pump

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Cancellation causes: context.Cause of a handler's context says why it was
// cancelled (ctx.Err() is context.Canceled, or context.DeadlineExceeded for
// a timeout).
var (
	// ErrConversationKilled: Kill stopped the handler's conversation. What
	// the handler answers afterwards is dropped as a dead letter.
	ErrConversationKilled = errors.New("pump: conversation killed")
	// ErrHandlerTimeout: the listener's timeout fired (Listener.Timeout). The
	// cause wraps it with the listener and the duration: "listener
	// run_command: handler timeout 2m0s". The sender gets a <huh>.
	ErrHandlerTimeout = errors.New("handler timeout")
	// ErrShutdown: an immediate shutdown (ShutdownNow). The message is
	// re-delivered after a restart (at-least-once).
	ErrShutdown = errors.New("pump: immediate shutdown")
	// ErrHalted: Halt stopped the handler. Its message waits in the
	// listener's queue and is handled again after Unhalt.
	ErrHalted = errors.New("pump: halted")
)

// workerSlot is one listener worker's running handler call (nil when the
// worker is idle): what Kill, Halt and introspection look at.
type workerSlot struct {
	call atomic.Pointer[handlerCall]
}

// Handler call states (handlerCall.state).
const (
	callRunning uint32 = iota
	callReturned
	callAbandoned
)

// handlerCall is one running handler call: its context, what cancels it,
// and who finishes its delivery — the worker when the handler returns, or
// the abandonment timer when it does not return within CancelGrace of its
// context's end (whichever moves state away from callRunning first).
type handlerCall struct {
	p    *Pump
	l    *listener
	d    *delivery
	slot *workerSlot
	ctx  context.Context
	// cancel cancels the call with a cause; stopDeadline releases the
	// timeout's timer (nil without a timeout); stopWatch unregisters the
	// watch that arms the abandonment.
	cancel       context.CancelCauseFunc
	stopDeadline context.CancelFunc
	stopWatch    func() bool
	state        atomic.Uint32
	grace        atomic.Pointer[time.Timer]
}

// startCall builds the context of a handler call of l for d and publishes
// the call in the worker's slot, where Kill and Halt find it.
func (p *Pump) startCall(l *listener, d *delivery, slot *workerSlot) *handlerCall {
	c := &handlerCall{p: p, l: l, d: d, slot: slot}
	ctx, cancel := context.WithCancelCause(p.handlerContext(l.Name, d.thread))
	c.cancel = cancel
	if l.timeout > 0 {
		ctx, c.stopDeadline = context.WithTimeoutCause(ctx, l.timeout, l.timeoutErr)
	}
	c.ctx = ctx
	if p.opts.CancelGrace > 0 {
		c.stopWatch = context.AfterFunc(ctx, c.arm)
	}
	slot.call.Store(c)
	return c
}

// end is called by the worker once the handler returned. It reports false
// when the call was abandoned meanwhile (its delivery is finished, and the
// worker's place taken: the worker must stop), else true and the cause the
// context was cancelled with before the handler returned (nil: not
// cancelled).
func (c *handlerCall) end() (cause error, ok bool) {
	if !c.state.CompareAndSwap(callRunning, callReturned) {
		c.l.lingering.Add(-1)
		c.release()
		c.p.log.Warn("abandoned handler returned", "listener", c.l.Name, "thread", c.d.thread)
		return nil, false
	}
	c.slot.call.CompareAndSwap(c, nil)
	if c.ctx.Err() != nil {
		cause = context.Cause(c.ctx)
	}
	c.release()
	return cause, true
}

// release frees the call's context, timers and watch.
func (c *handlerCall) release() {
	if c.stopWatch != nil {
		c.stopWatch()
	}
	if t := c.grace.Load(); t != nil {
		t.Stop()
	}
	if c.stopDeadline != nil {
		c.stopDeadline()
	}
	c.cancel(context.Canceled)
}

// arm runs once the call's context ended: unless the handler has returned
// or the pump is stopping at once, the handler gets CancelGrace to return
// before it is abandoned.
func (c *handlerCall) arm() {
	if c.state.Load() != callRunning || errors.Is(context.Cause(c.ctx), ErrShutdown) {
		return
	}
	c.grace.Store(time.AfterFunc(c.p.opts.CancelGrace, c.abandon))
}

// abandon gives up on a handler that did not return within CancelGrace of
// its context's end: its delivery is finished as its cause says (a <huh>
// for a timeout, a dead letter for a kill, back to the queue for a halt),
// its slot is freed, and a new worker takes the place of the one stuck in
// the handler (at most Workers abandoned calls per listener linger at once;
// beyond that the listener runs with one worker fewer).
func (c *handlerCall) abandon() {
	if !c.state.CompareAndSwap(callRunning, callAbandoned) {
		return
	}
	p, l, d := c.p, c.l, c.d
	c.slot.call.CompareAndSwap(c, nil)
	cause := context.Cause(c.ctx)
	p.abandoned.Add(1)
	lingering := l.lingering.Add(1)
	p.log.Error("handler abandoned: still running after its context ended", "listener", l.Name, "thread", d.thread,
		"cause", cause, "grace", p.opts.CancelGrace, "lingering", lingering)
	p.conclude(l, d, cause, nil, nil)
	if int(lingering) <= l.Workers {
		go p.runWorker(l, c.slot) // takes over the stuck worker's place (and its WaitGroup counts)
		return
	}
	p.log.Error("listener runs with one worker fewer: too many abandoned handlers linger", "listener", l.Name,
		"lingering", lingering)
	l.workers.Done()
	p.wg.Done()
}

// cancelCalls cancels, with cause, every running handler call for which
// match holds; it returns how many it cancelled.
func (p *Pump) cancelCalls(cause error, match func(*handlerCall) bool) int {
	n := 0
	for _, l := range p.liveListeners() {
		for i := range l.current {
			if c := l.current[i].call.Load(); c != nil && match(c) {
				c.cancel(cause)
				n++
			}
		}
	}
	return n
}

// listenerTimeout sets l's handler deadline from its Timeout and the pump's
// defaults.
func (p *Pump) listenerTimeout(l *listener) {
	t := l.Timeout
	if t == 0 {
		switch {
		case l.Remote:
			t = -1
		case l.Agent:
			t = p.opts.AgentTimeout
		default:
			t = p.opts.HandlerTimeout
		}
	}
	if t < 0 {
		t = 0
	}
	l.timeout = t
	l.timeoutErr = fmt.Errorf("listener %s: %w %s", l.Name, ErrHandlerTimeout, t)
}
