package pump

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// Cancellation causes: context.Cause of a handler's context says why it was
// cancelled (ctx.Err() is context.Canceled whatever the cause).
var (
	// ErrConversationKilled: Kill stopped the handler's conversation. What
	// the handler answers afterwards is dropped as a dead letter.
	// It is xmlpipe.ErrConversationKilled, which handlers can test for.
	ErrConversationKilled = xmlpipe.ErrConversationKilled
	// ErrCancelled: Cancel stopped the answer in flight of the handler's
	// conversation, which goes on (a later message may continue it). What
	// the handler answers afterwards is dropped as a dead letter.
	// It is xmlpipe.ErrCancelled, which handlers can test for.
	ErrCancelled = xmlpipe.ErrCancelled
	// ErrHandlerTimeout: the listener's timeout fired (Listener.Timeout). The
	// cause wraps it with the listener and the duration: "listener
	// run_command: handler timeout 2m0s". The sender gets a <huh>.
	// It is xmlpipe.ErrHandlerTimeout, which handlers can test for.
	ErrHandlerTimeout = xmlpipe.ErrHandlerTimeout
	// ErrShutdown: an immediate shutdown (ShutdownNow). The message is
	// re-delivered after a restart (at-least-once).
	// It is xmlpipe.ErrShutdown, which handlers can test for.
	ErrShutdown = xmlpipe.ErrShutdown
	// ErrHalted: Halt stopped the handler. Its message waits in the
	// listener's queue and is handled again after Unhalt.
	// It is xmlpipe.ErrHalted, which handlers can test for.
	ErrHalted = xmlpipe.ErrHalted
	// ErrDrainTimedOut: a graceful Shutdown's drain timed out while the
	// handler ran. Like an immediate shutdown's, its message is
	// re-delivered after a restart (at-least-once); it wraps ErrShutdown.
	ErrDrainTimedOut = fmt.Errorf("%w: the drain timed out", ErrShutdown)
)

// workerSlot is one listener worker's running handler call (nil when the
// worker is idle): what Kill, Halt, the watchdog and introspection look at.
type workerSlot struct {
	call atomic.Pointer[handlerCall]
}

// Handler call states (handlerCall.state).
const (
	callRunning uint32 = iota
	callReturned
	callAbandoned
	// callParked: given up on like callAbandoned (its slot and worker
	// freed), but a halted call its handler had settled: its delivery is
	// concluded by what the handler returns, whenever it does.
	callParked
)

// handlerCall is one running handler call: its context, what cancels it,
// and who finishes its delivery — the worker when the handler returns, or
// the watchdog when it does not return within CancelGrace of its
// cancellation (whichever moves state away from callRunning first).
//
// Its deadline and grace are kept by the pump's watchdog, not by timers of
// its own: a handler call costs one context and no timer.
type handlerCall struct {
	p *Pump
	l *listener
	d *delivery
	// slot is where the call is published: its worker's, or once detached
	// (Detach) a slot of its own. mu guards it and detached against the
	// watchdog's abandon; the handler's goroutine, the only one to change
	// them (detach), reads them without it.
	mu       sync.Mutex
	slot     *workerSlot
	detached bool
	ctx      context.Context
	cancel   context.CancelCauseFunc
	// deadline is when the listener's timeout fires (unix nanos, 0: none);
	// cancelledAt is when the call was cancelled for a reason that may end
	// in abandonment (a timeout, Kill, Halt; 0: not so cancelled).
	deadline    int64
	cancelledAt atomic.Int64
	state       atomic.Uint32
	// h is what the handler's context carries (MessageSeq, AfterJournal).
	h handling
	// timed is ctx with the listener's timeout as its Deadline (ctx is it
	// when the listener has one), kept here so it costs no allocation.
	timed callContext
	// handlingCtx is the context the handler gets: ctx carrying h, kept
	// here for the same reason.
	handlingCtx handlingContext
	// parked counts, for a parked call (see abandon), the two parties that
	// must be done before its delivery is concluded: the watchdog freeing
	// its slot and the worker whose handler returned (resp, err). The last
	// concludes.
	parked atomic.Int32
	resp   xmlpipe.Response
	err    error
}

// callContext is a handler call's context carrying the listener's timeout
// as its Deadline, so a handler can tell a wait that would outlast it (a
// provider's Retry-After) from one worth waiting. Cancellation is the
// inner context's, by the pump's watchdog: no timer is set.
type callContext struct {
	context.Context
	deadline time.Time
}

// Deadline returns when the watchdog cancels the call.
func (c *callContext) Deadline() (time.Time, bool) { return c.deadline, true }

// handlingContext is a handler's context carrying its handling under
// handlingKey, as context.WithValue would, kept in the handlerCall.
type handlingContext struct {
	context.Context
	h *handling
}

// Value returns the handling for handlingKey, else the inner context's
// value.
func (c *handlingContext) Value(key any) any {
	if _, ok := key.(handlingKey); ok {
		return c.h
	}
	return c.Context.Value(key)
}

// startCall builds the context of a handler call of l for d and publishes
// the call in the worker's slot, where Kill, Halt and the watchdog find it.
func (p *Pump) startCall(l *listener, d *delivery, slot *workerSlot) *handlerCall {
	c := &handlerCall{p: p, l: l, d: d, slot: slot}
	c.h.call = c
	c.ctx, c.cancel = context.WithCancelCause(p.handlerContext(l.Name, d.thread))
	if l.timeout > 0 {
		end := time.Now().Add(l.timeout)
		c.deadline = end.UnixNano()
		c.timed = callContext{Context: c.ctx, deadline: end}
		c.ctx = &c.timed
	}
	slot.call.Store(c)
	return c
}

// end is called by the worker once the handler returned. It reports false
// when the call was abandoned meanwhile (its delivery is finished — or,
// parked, left for the worker to conclude: see concludeParked — and
// the worker's place taken: the worker must stop), else true and the cause
// the context was cancelled with before the handler returned (nil: not
// cancelled).
func (c *handlerCall) end() (cause error, ok bool) {
	if !c.state.CompareAndSwap(callRunning, callReturned) {
		c.l.lingering.Add(-1)
		c.cancel(context.Canceled)
		c.p.log.Warn("abandoned handler returned", "listener", c.l.Name, "thread", c.d.thread,
			"settled", c.state.Load() == callParked)
		return nil, false
	}
	c.slot.call.CompareAndSwap(c, nil)
	if c.detached {
		c.l.removeDetached(c.slot)
	}
	if c.ctx.Err() != nil {
		cause = context.Cause(c.ctx)
	}
	c.cancel(context.Canceled)
	return cause, true
}

// cancelWith cancels the call with cause at now (unix nanos) and starts its
// grace: unless it returns within CancelGrace, the watchdog abandons it.
// The first cause sticks.
func (c *handlerCall) cancelWith(cause error, now int64) {
	c.cancelledAt.CompareAndSwap(0, now)
	c.cancel(cause)
}

// abandon gives up on a handler that did not return within CancelGrace of
// its cancellation: its delivery is finished as its cause says (a <huh>
// for a timeout, a dead letter for a kill, back to the queue for a halt),
// its slot is freed, and a new worker takes the place of the one stuck in
// the handler (at most Workers abandoned calls per listener linger at once;
// beyond that the listener runs with one worker fewer). A detached call
// (Detach) holds no worker's place: none is started for it.
//
// A halted call whose handler had settled it (xmlpipe.Settle) is parked
// instead: its slot and worker are freed all the same, but its response is
// still the handling's outcome — processed once the handler returns
// (concludeParked), never dropped, and the message is not handled again.
func (c *handlerCall) abandon() {
	cause := context.Cause(c.ctx)
	settled := errors.Is(cause, ErrHalted) && c.h.settled.Load()
	next := callAbandoned
	if settled {
		next = callParked
		c.parked.Store(2) // before the state: a worker that sees it finds the count
	}
	if !c.state.CompareAndSwap(callRunning, next) {
		return
	}
	p, l, d := c.p, c.l, c.d
	c.mu.Lock()
	slot, detached := c.slot, c.detached
	c.mu.Unlock()
	slot.call.CompareAndSwap(c, nil)
	if detached {
		l.removeDetached(slot)
	}
	p.abandoned.Add(1)
	lingering := l.lingering.Add(1)
	if settled {
		p.log.Error("handler given up on: still running after its context ended; it settled its handling, so "+
			"its response is processed when it returns", "listener", l.Name, "thread", d.thread, "cause", cause,
			"grace", p.opts.CancelGrace, "lingering", lingering)
		p.freeSlot(l, d)
		c.parkDone()
	} else {
		c.h.after.drop() // its response is never processed
		p.log.Error("handler abandoned: still running after its context ended", "listener", l.Name, "thread", d.thread,
			"cause", cause, "grace", p.opts.CancelGrace, "lingering", lingering)
		p.conclude(l, d, cause, nil, nil)
	}
	if detached {
		// It held no worker's place, only its counts: released now, so
		// that RemoveListener and Shutdown do not wait for it either.
		p.detachedDone(l)
		return
	}
	if int(lingering) <= l.Workers {
		go p.runWorker(l, slot) // takes over the stuck worker's place (and its WaitGroup counts)
		return
	}
	p.log.Error("listener runs with one worker fewer: too many abandoned handlers linger", "listener", l.Name,
		"lingering", lingering)
	l.workers.Done()
	p.wg.Done()
}

// returnedParked is called by the worker of a parked call (see abandon)
// once its handler returned resp and err.
func (c *handlerCall) returnedParked(resp xmlpipe.Response, err error) {
	c.resp, c.err = resp, err
	c.parkDone()
}

// parkDone marks one party of a parked call done (see parked); the last
// one concludes its delivery.
func (c *handlerCall) parkDone() {
	if c.parked.Add(-1) == 0 {
		c.concludeParked()
	}
}

// concludeParked finishes the delivery of a parked call once its slot
// is freed and its handler returned: as a handling that returned in time,
// its response is processed if the handler still settles it and its
// conversation was not killed meanwhile; unsettled since, its message
// waits for the resume like any halted one's.
func (c *handlerCall) concludeParked() {
	p, l, d, resp, err := c.p, c.l, c.d, c.resp, c.err
	c.resp, c.err = nil, nil
	d.after = c.h.after.take()
	var cause error
	switch {
	case p.killed(d.conv):
		cause = p.dropCause(d.conv)
	case !c.h.settled.Load():
		cause = ErrHalted
	default:
		p.log.Info("settled handling returned after its grace: its response is processed", "listener", l.Name,
			"thread", d.thread)
	}
	p.conclude(l, d, cause, resp, err)
}

// Watchdog tick bounds: it checks the running calls every quarter of the
// shortest listener timeout or CancelGrace, within these.
const (
	minWatchEvery = 5 * time.Millisecond
	maxWatchEvery = time.Second
)

// watchEvery is how often the watchdog checks the running calls for a
// period d (a timeout or the grace) to be kept within a quarter of it.
func watchEvery(d time.Duration) time.Duration {
	return min(max(d/4, minWatchEvery), maxWatchEvery)
}

// noteTimeout makes the watchdog tick often enough for a timeout d.
func (p *Pump) noteTimeout(d time.Duration) {
	if d <= 0 {
		return
	}
	every := int64(watchEvery(d))
	for {
		cur := p.watchEvery.Load()
		if cur <= every || p.watchEvery.CompareAndSwap(cur, every) {
			break
		}
	}
	select {
	case p.watchPoke <- struct{}{}: // re-arm with the shorter period
	default:
	}
}

// watchdog fires the listeners' timeouts and abandons the calls still
// running CancelGrace after their cancellation, until stop is closed.
func (p *Pump) watchdog(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTimer(time.Duration(p.watchEvery.Load()))
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-p.watchPoke:
		case <-t.C:
			p.sweep(time.Now().UnixNano())
		}
		t.Reset(time.Duration(p.watchEvery.Load()))
	}
}

// sweep cancels the calls past their deadline and abandons those past
// their grace.
func (p *Pump) sweep(now int64) {
	grace := int64(p.opts.CancelGrace)
	var calls []*handlerCall
	for _, l := range p.liveListeners() {
		calls = l.runningCalls(calls[:0])
		for _, c := range calls {
			if c.deadline != 0 && now >= c.deadline && c.ctx.Err() == nil {
				c.cancelWith(l.timeoutErr, now)
			}
			if at := c.cancelledAt.Load(); at != 0 && grace > 0 && now-at >= grace {
				c.abandon()
			}
		}
	}
}

// cancelCalls cancels, with cause, every running handler call for which
// match holds; it returns how many it cancelled. Unless the cause is an
// immediate shutdown (ErrShutdown itself), each gets its grace (see
// cancelWith).
func (p *Pump) cancelCalls(cause error, match func(*handlerCall) bool) int {
	n := 0
	now := time.Now().UnixNano()
	var calls []*handlerCall
	for _, l := range p.liveListeners() {
		calls = l.runningCalls(calls[:0])
		for _, c := range calls {
			if !match(c) {
				continue
			}
			if cause == ErrShutdown { // immediate: no grace (ErrDrainTimedOut gets one)
				c.cancel(cause)
			} else {
				c.cancelWith(cause, now)
			}
			n++
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
