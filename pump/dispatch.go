package pump

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// runWorker is one of a listener's workers: it pops deliveries in the
// scheduling order and runs the handler under the fair share of the global
// handler slots (Remote listeners: outside them). It stops when the queue is
// closed and drained, or when its handler call was abandoned (a new worker
// took its place and its WaitGroup counts).
func (p *Pump) runWorker(l *listener, slot *workerSlot) {
	for {
		d, ok := l.queue.pop()
		if !ok {
			l.workers.Done()
			p.wg.Done()
			return
		}
		if p.dropsQueued(l, d) {
			p.drop(d)
			continue
		}
		if !l.Remote && !p.takeSlot(l, d) {
			continue // its conversation was killed while it waited: finished
		}
		l.active.Add(1)
		if !p.handle(l, d, slot) {
			return
		}
	}
}

// takeSlot takes a global handler slot for l to handle d, waiting for one
// when l holds its share or every slot is taken. It reports false when d's
// conversation is killed meanwhile: a kill ends the wait at once, and d is
// finished as a killed queued message is (killQueued) — by Kill, or here
// when the kill came before the wait began.
func (p *Pump) takeSlot(l *listener, d *delivery) bool {
	w := p.slots.enter(l, d)
	if w == nil {
		return true
	}
	// After the waiter is queued: a Kill now either finds it (withdrawSlots)
	// or marked the conversation before, which this check sees.
	if p.killed(d.conv) && len(p.slots.withdraw(d.conv, w)) == 1 {
		p.killQueued(l, d)
		return false
	}
	return p.slots.wait(w)
}

// withdrawSlots ends the waits for a handler slot of the killed
// conversation conv's messages, which workers took from their queues
// (takeSlot), and finishes each as a killed queued message. It returns how
// many it took.
func (p *Pump) withdrawSlots(conv string) int {
	ws := p.slots.withdraw(conv, nil)
	for _, w := range ws {
		p.killQueued(w.l, w.d)
	}
	return len(ws)
}

// finish ends the handling of d at l: it frees the handler's slot, then
// (unless requeue puts d back in l's queue, or an immediate shutdown drops
// it) marks the message delivered and runs the handler's outputs through
// the ingress stages. ran says whether the handler was called: a message
// dead-lettered before it (its conversation killed) is not counted handled.
func (p *Pump) finish(l *listener, d *delivery, requeue, ran bool) {
	if d.slotFreed {
		d.slotFreed = false // freed when its call was parked (freeSlot)
	} else {
		l.active.Add(-1)
		if !l.Remote {
			p.slots.release(l)
		}
	}
	if p.stopNow.Load() { // stopped meanwhile: the handling may be cut short
		p.drop(d)
		return
	}
	if p.cutByDrain(d) {
		p.log.Warn("handling finished after the shutdown's drain timed out: its message is left undelivered "+
			"for recovery", "listener", l.Name, "thread", d.thread)
		p.drop(d)
		return
	}
	if d.stopped {
		p.log.Info("handling ended by the stop: its message is left undelivered for recovery at the next start",
			"listener", l.Name, "thread", d.thread)
		p.drop(d)
		return
	}
	if requeue {
		d.after.drop()
		d.after = nil
		p.requeue(l, d)
		return
	}
	d.mark.release()
	var ended time.Time // when the handling ended (zero: it did not run)
	if ran {
		ended = p.opts.Clock()
		l.handled.Add(1)
		l.lastSeen.Store(ended.UnixNano())
		p.processed.Add(1)
	}
	p.runOutputs(d)
	after := d.after
	d.after = nil
	after.release() // the outputs hold theirs until they are journaled
	p.releaseHandled(d, ended)
	p.convDone(d.conv)
}

// freeSlot frees the handler slot of d's handling at l before the handling
// is finished (a parked call: see handlerCall.abandon); finish then
// frees none.
func (p *Pump) freeSlot(l *listener, d *delivery) {
	d.slotFreed = true
	l.active.Add(-1)
	if !l.Remote {
		p.slots.release(l)
	}
}

// cutByDrain reports whether d's handling finishes after a graceful
// Shutdown's drain timed out (the work queue closing: its outputs could not
// be processed) and its message is journaled for re-delivery: it is then
// dropped undelivered (see drop), for Recover to handle it again on the
// next start, rather than marked delivered or its answer dead-lettered. A
// message that is not journaled is finished as ever (its outputs become
// dead letters): dropping it would leave no trace of it.
func (p *Pump) cutByDrain(d *delivery) bool {
	return d.mark != nil && p.drainCut.Load()
}

// requeue puts a delivery whose handling Halt interrupted back in its
// listener's queue, to be handled again after Unhalt.
func (p *Pump) requeue(l *listener, d *delivery) {
	d.retry = true // a halted handling never responded: it has no outputs
	if ok, _ := p.enqueue(l, d); ok {
		return
	}
	p.deadLetter(d.conv, d.thread, d.from, l.Name, d.payloadName, nil, "listener pipeline closed while halted")
	p.releaseDelivery(d)
	p.convDone(d.conv)
}

// drop abandons a delivery in an immediate shutdown (ShutdownNow), or one
// at a halted listener in a graceful shutdown that keeps the halt: it is not
// marked delivered, so Recover re-delivers its journaled message on the next
// start, and what its handler emitted is dropped with it.
func (p *Pump) drop(d *delivery) {
	d.turn = nil // nothing of the handling is journaled
	d.after.drop()
	d.after = nil
	for i := range d.outputs {
		p.release()
		d.outputs[i] = nil
	}
	d.outputs = d.outputs[:0]
	p.releaseDelivery(d)
}

// handle delivers one message to a listener's handler and processes its
// response. It reports false when the call was abandoned (the worker must
// stop: see handlerCall.abandon) or detached (Detach: a new worker took the
// worker's place, and this goroutine, its handling done, released its
// counts).
func (p *Pump) handle(l *listener, d *delivery, slot *workerSlot) bool {
	p.beginHandling(d)
	c := p.startCall(l, d, slot)
	if p.drainCut.Load() { // the drain timed out: cancelled from the start, like those running then
		c.cancelWith(ErrDrainTimedOut, time.Now().UnixNano())
	}
	// The call is published before these checks: a Kill, Halt or
	// ShutdownNow either finds it in the slot or is seen here.
	if stop, killed, halted := p.stopNow.Load(), p.killed(d.conv), p.haltedFor(l) || p.senderHalted(d.from); stop || killed || halted {
		if _, ok := c.end(); !ok {
			return false // cancelled and abandoned before it began: finished already
		}
		if killed && !stop {
			p.deadLetter(d.conv, d.thread, d.from, l.Name, d.payloadName, nil, p.dropReason(d.conv))
		}
		p.finish(l, d, halted && !killed, false) // an immediate shutdown drops it
		return true
	}
	md := xmlpipe.Metadata{ThreadID: d.thread, Conversation: d.conv, From: d.from, User: p.threadUser(d.thread), IsSelfCall: d.from == l.Name,
		InReplyTo: d.inReplyTo}
	reach := d.reach(l)
	if reach != nil {
		md.Profile = reach
	}
	if l.Agent {
		ps := l.peerset.Load()
		if reach != nil {
			ps = reach.peerSet(l, ps)
		}
		md.OwnName = l.Name
		md.UsageInstructions, md.Peers = ps.usage, ps.peers
		md.TodoNudge = registry.FormatNudge(p.todos.RaisedFor(d.thread, l.Name))
	}
	if !d.retry && !p.recordedAlready(d, l.Name) {
		if d.errPayload == nil {
			p.todos.Raise(d.thread, d.payloadName, d.from, d.payload)
		}
		// The payload bytes are canonical bytes, never modified once built.
		if _, err := p.context.AppendShared(registry.Slot{ThreadID: d.thread, From: d.from, To: l.Name, PayloadType: d.payloadName,
			Payload: d.payload, Raw: d.payloadBytes, OwnName: md.OwnName, IsSelfCall: md.IsSelfCall,
			UsageInstructions: md.UsageInstructions, TodoNudge: md.TodoNudge, InReplyTo: d.inReplyTo,
			Seq: d.mark.messageSeq()}); err != nil {
			p.log.Warn("context buffer", "thread", d.thread, "listener", l.Name, "error", err)
		}
	}
	t0 := p.stageStart()
	c.h.mark = d.mark
	resp, err := p.call(c.ctx, l, d, &c.h, md)
	cause, ok := c.end()
	// After end: the cause Halt cancelled the call with sticks, so a call
	// halted while it ran (or abandoned since) reports itself interrupted.
	// A handling the stop ended (ErrStopping) and Recover takes up again
	// was interrupted, not failed.
	stopped := d.mark != nil && errors.Is(err, ErrStopping)
	p.handlerEnd(l.Name, d.thread, t0, err != nil && !stopped, stopped || errors.Is(context.Cause(c.ctx), ErrHalted))
	if !ok {
		if c.state.Load() == callParked {
			c.returnedParked(resp, err) // concludes its delivery, now or once its slot is freed
		}
		return false // a detached one's counts were released when it was given up on (abandon)
	}
	d.after = c.h.after.take()
	if errors.Is(cause, ErrHalted) && c.h.settled.Load() {
		// The handler settled before the halt reached it (xmlpipe.Settle):
		// its response is the handling's outcome, not dropped.
		p.log.Info("handling settled before the halt: its response is processed", "listener", l.Name,
			"thread", d.thread)
		cause = nil
	}
	p.conclude(l, d, cause, resp, err)
	if c.detached {
		p.detachedDone(l)
		return false
	}
	return true
}

// conclude finishes a handling by what ended it: cause is why its context
// was cancelled before the handler returned (nil: it was not), resp and err
// what the handler returned. A kill drops the answer as a dead letter, a
// timeout sends the sender a <huh> naming it (the answer is discarded), a
// halt puts the message back in the queue, an immediate shutdown drops it,
// and so does a handler the stop ended (ErrStopping) when its message is
// journaled; otherwise the response is processed.
func (p *Pump) conclude(l *listener, d *delivery, cause error, resp xmlpipe.Response, err error) {
	switch {
	case p.stopNow.Load() || p.cutByDrain(d) || errors.Is(cause, ErrShutdown) && !errors.Is(cause, ErrDrainTimedOut):
		// an immediate shutdown cancelled it, or it returned after the
		// drain gave up: neither answered nor failed (see drop). A message
		// that was never journaled, cancelled by the drain's timeout, is
		// finished as ever: dropped, it would leave no trace.
		d.after.drop()
		d.after = nil
	case errors.Is(cause, ErrConversationKilled):
		p.deadLetter(d.conv, d.thread, d.from, l.Name, d.payloadName, nil,
			"conversation killed: the handler's answer is dropped")
	case errors.Is(cause, ErrCancelled):
		p.deadLetter(d.conv, d.thread, d.from, l.Name, d.payloadName, nil,
			CancelledReason+": the handler's answer is dropped")
	case errors.Is(cause, ErrHalted):
		p.log.Info("handling halted: the message waits for unhalt", "listener", l.Name, "thread", d.thread)
		p.finish(l, d, true, true)
		return
	case errors.Is(cause, ErrHandlerTimeout):
		p.handlerFailed(l, d, fmt.Errorf("%w: %w", failure.ErrHandler, cause))
	case d.mark != nil && errors.Is(err, ErrStopping):
		// the stop ended the handler (a federated call waiting on its
		// peer): neither answered nor failed, its journaled message is
		// left for Recover (finish drops it undelivered).
		d.stopped = true
		d.after.drop()
		d.after = nil
	case err != nil:
		p.handlerFailed(l, d, err)
	default:
		p.respond(l, d, resp)
	}
	p.finish(l, d, false, true)
}

// call runs the handler (or the error handler) with h in its context,
// turning a panic into an error.
func (p *Pump) call(ctx context.Context, l *listener, d *delivery, h *handling, md xmlpipe.Metadata) (resp xmlpipe.Response, err error) {
	defer func() {
		if r := recover(); r != nil {
			p.log.Error("handler panicked", "listener", l.Name, "thread", d.thread, "panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("%w: %s panicked: %v", failure.ErrHandler, l.Name, r)
		}
	}()
	if md.Profile != nil { // network tools check their dials against it (xmlpipe.CheckDial)
		ctx = xmlpipe.WithProfile(ctx, md.Profile)
	}
	// h for MessageSeq, AfterJournal, xmlpipe.Settle: in the call's own
	// context value, which costs no allocation (call runs once per call).
	if c := h.call; c != nil {
		c.handlingCtx = handlingContext{Context: ctx, h: h}
		ctx = &c.handlingCtx
	} else {
		ctx = context.WithValue(ctx, handlingKey{}, h)
	}
	if d.errPayload != nil {
		return l.errHandler.HandleError(ctx, d.errPayload, md)
	}
	resp, err = l.Handler.Handle(ctx, d.payload, md)
	if err != nil && !errors.Is(err, failure.ErrHandler) {
		err = handlerError(l.Name, err)
	}
	return resp, err
}

// handlerFailed sends the <huh> for a handler error or panic to the message's
// sender; the thread stays alive until its conversation completes (spend).
func (p *Pump) handlerFailed(l *listener, d *delivery, err error) {
	p.failed.Add(1)
	p.tellFailure(l, d, err)
}

// tellFailure is handlerFailed but for the count of failed messages: it
// logs err and tells it (tell).
func (p *Pump) tellFailure(l *listener, d *delivery, err error) {
	p.log.Warn("handler failed", "listener", l.Name, "thread", d.thread, "from", d.from, "error", err)
	p.tell(l, d, err)
}

// tell records err as l's last error and tells the sender of d (or, for an
// error handler's failure, the dead letters).
func (p *Pump) tell(l *listener, d *delivery, err error) {
	l.lastError.Store(&listenerError{msg: err.Error(), at: p.opts.Clock(), handled: l.handled.Load() + 1,
		thread: d.thread, profile: d.prof.nameOf()})
	huh := huhAbout(err, d.payloadBytes)
	diags := handlerDiagnostics(err)
	ref := ""
	if d.errPayload == nil {
		ref = p.threads.Ref(d.thread) // the failed message was sent with it (correlation.go)
	}
	now := p.opts.Clock()
	if d.errPayload == nil {
		// Nothing more arrives on the failed hop's thread: it ends with
		// its conversation, an agent's too — its sender was told, and a
		// retry opens a new thread. What a continuation needs stays: a
		// conversation root (and the history kept on it) is never spent,
		// nor a thread that awaits answers (xmlpipe.Await), and answers
		// still in flight to the hop keep it until they have come.
		p.spend(d.conv, d.thread)
	}
	if d.errPayload != nil {
		p.deadLetterErr(nil, d.conv, d.thread, d.from, l.Name, d.payloadName, nil, "error handler failed: "+err.Error(), err)
		return
	}
	var tooDeep *TooDeepError
	if errors.As(err, &tooDeep) {
		sender := d.tbl.lookup(d.from)
		if d.senderOutside {
			sender = nil
		}
		if p.stopTooDeep(l, d, sender, tooDeep) {
			return
		}
	}
	if sender := d.tbl.lookup(d.from); sender != nil && !d.senderOutside {
		// The <huh> goes back on the thread the sender's handler ran on, as for
		// any other rejected output of a listener (fail → origThread).
		thread := d.senderThread
		if thread == "" {
			thread = d.thread
		}
		if lower(sender.Name) == lower(l.Name) && p.tellSelfCaller(l, d, thread, huh, diags, err) {
			return
		}
		if sender.errHandler == nil && thread != d.thread && !p.threads.Known(thread) &&
			p.tellSelfCaller(l, d, d.thread, huh, diags, err) {
			// d was the answer of a sender that cannot hear of its failure,
			// and whose part is over (its thread ended with the answer): l
			// failed to go on with it, and l's caller is told, as when l
			// fails on any other message.
			return
		}
		p.record(Record{Time: now, Direction: Outbound, Kind: RecordHuh, Conversation: d.conv, Thread: thread,
			From: "core", To: sender.Name, Listener: l.Name, PayloadTag: d.payloadName, Diagnostics: diags,
			Profile: d.prof.nameOf()})
		p.sendErrorNote(d.conv, d.tbl, sender, thread, huh, d.depth, ref,
			&errorNote{detail: err.Error(), cause: err, at: l.Name, about: d.about(ref)}, 0)
		return
	}
	p.record(Record{Time: now, Direction: Outbound, Kind: RecordHuh, Conversation: d.conv, Thread: d.thread,
		From: "core", To: d.from, Listener: l.Name, PayloadTag: d.payloadName, Diagnostics: diags, Profile: d.prof.nameOf()})
	p.emitToConv(d.conv, Event{Kind: EventHuh, Time: now, Conversation: d.conv, Thread: d.thread, From: "core",
		To: d.from, Listener: l.Name, PayloadName: d.payloadName, Payload: huh, Error: huh.Error,
		Diagnostics: liveDiagnostics(diags), Profile: d.prof.nameOf(), Cause: err})
}

// outputRejected answers raw handler output that yields no message at all
// (no XML element, nothing repairable): like any other rejected output of a
// listener — an unknown root tag, a schema failure — the <huh> goes back to
// the listener that produced it, on the thread its handler ran on, so an LLM
// agent can correct itself. Output of a plain listener's error handler is
// not answered again (it becomes a dead letter), an agent's only
// MaxErrorHandlerRetries times in a row, which bounds the exchange.
func (p *Pump) outputRejected(l *listener, d *delivery, err error, text []byte) {
	p.failed.Add(1)
	p.log.Warn("handler output rejected", "listener", l.Name, "thread", d.thread, "error", err)
	if d.quietOutput(l) {
		p.deadLetter(d.conv, d.thread, l.Name, "", "", clip(text), errOutputRefused(l, d.outRound(), err))
		return
	}
	diags := []failure.Diagnostic{{Stage: failure.StageExtract, Msg: err.Error()}}
	p.record(Record{Time: p.opts.Clock(), Direction: Outbound, Kind: RecordHuh, Conversation: d.conv, Thread: d.thread,
		From: l.Name, Listener: l.Name, Envelope: clip(text), Diagnostics: diags, Profile: d.prof.nameOf()})
	p.sendErrorRound(d.conv, d.tbl, l, d.thread, stage.NewHuh(err, clip(text)), d.depth, "", d.about(""), errorDetail(diags),
		err, d.outRound())
}

// respond processes a handler's Response: forward, respond, raw or end.
func (p *Pump) respond(l *listener, d *delivery, resp xmlpipe.Response) {
	switch r := resp.(type) {
	case nil:
		if !p.deferEnd(d.conv, d.thread) {
			p.endThread(d.thread)
		}
	case *xmlpipe.SendResponse:
		p.forward(nil, l, d, r)
	case *xmlpipe.SendsResponse:
		p.sends(l, d, r.Sends)
	case *xmlpipe.AwaitResponse:
		// nothing to send; the thread stays open for the answers due,
		// however its conversation ends — an agent's too, should a later
		// turn of it fail (tellFailure spends a failed hop's thread)
		p.threads.Await(d.thread)
	case *xmlpipe.RespondResponse:
		p.reply(l, d, r.Payload)
	case *xmlpipe.RawResponse:
		p.raw(l, d, r.Bytes)
	default:
		p.handlerFailed(l, d, fmt.Errorf("%w: %s returned an unknown response type %T", failure.ErrHandler, l.Name, resp))
	}
}

// mayReach enforces an agent's peers: an agent reaches itself (self-iteration)
// and the names in its peers list, nothing else. Names compare as routing
// resolves them, case-insensitively. Non-agents reach anyone.
func (l *listener) mayReach(to string) bool {
	if !l.Agent {
		return true
	}
	return lower(to) == lower(l.Name) || l.peerset.Load().set[lower(to)]
}

// peerViolationIn sends the agent a SystemError on its own thread (which
// stays alive), about its message sent with ref, as part of turn t (see
// journalIn; nil: at once).
func (p *Pump) peerViolationIn(t *turn, l *listener, d *delivery, to, ref string) {
	p.log.Warn("peer violation", "listener", l.Name, "to", to, "thread", d.thread, "peers", l.Peers)
	if l.errHandler == nil {
		p.deadLetterIn(t, d.conv, d.thread, l.Name, to, "", nil, "peer violation; agent has no error handler")
	}
	detail := fmt.Sprintf("%q is not among the peers of %s", to, l.Name)
	if l.errHandler != nil && d.quietOutput(l) {
		p.deadLetterIn(t, d.conv, d.thread, l.Name, to, "", nil,
			errOutputRefused(l, d.outRound(), errors.New("peer violation: "+detail)))
		return
	}
	about, round := d.about(ref), d.outRound()
	p.later(t, func() {
		p.sendErrorRound(d.conv, d.tbl, l, d.thread, stage.RoutingError(), d.depth, ref, about, detail, nil, round)
	})
}

// forward is Send(to, payload): extend the chain (keeping the send's ref
// with the child thread) and re-enter the full chain, as part of turn t
// (nil: none). A send that cannot be made is a handler failure; with a ref,
// it is answered to the sender itself, bound to the ref, so the sender can
// tell which of its messages failed.
func (p *Pump) forward(t *turn, l *listener, d *delivery, s *xmlpipe.SendResponse) {
	to := s.To
	if err := stage.CheckRef(s.Ref); err != nil {
		p.handlerFailed(l, d, fmt.Errorf("%w: %s: send to %s: %w", failure.ErrHandler, l.Name, to, err))
		return
	}
	if strings.TrimSpace(to) == "" {
		// Not a name: a handler that took its recipient from a field its
		// sender left empty. Its sender hears what is wrong.
		p.unsendable(t, l, d, s.Ref, fmt.Errorf("%w: %s: a %s sent to no one: %w", failure.ErrHandler, l.Name,
			p.payloadLabel(s.Payload), ErrNoRecipient))
		return
	}
	if !l.mayReach(to) {
		p.peerViolationIn(t, l, d, to, s.Ref)
		return
	}
	if p.chainTooDeep(t, l, d, to, s.Ref) {
		return
	}
	pt, body, canonical, err := p.encodePayload(s.Payload)
	if err != nil {
		p.unsendable(t, l, d, s.Ref, fmt.Errorf("%w: %s: %w", failure.ErrHandler, l.Name, err))
		return
	}
	child, prof, spent, err := p.extend(d, l, to, s.Ref)
	if err != nil {
		p.deadLetterIn(t, d.conv, d.thread, l.Name, to, pt.Name(), nil, "cannot extend thread: "+err.Error())
		return
	}
	env := stage.AppendEnvelope(make([]byte, 0, len(body)+200), l.Name, to, child, body)
	p.emit(d, &work{raw: env, conv: d.conv, tbl: d.tbl, prof: prof, profSet: true, sender: l, senderThread: d.thread,
		depth: d.depth + 1, payloadType: pt, canonical: canonical, admitted: d.admitted, parent: d.mark.retain(), ref: s.Ref,
		spends: spent, errOutput: d.quietOutput(l), errRound: d.outRound(), answers: unheard(l, d)})
}

// unheard is the delivery whose caller hears of the refusal of l's output
// sent handling d — d, when l has no error handler to hear of it; nil
// otherwise (l is told itself).
func unheard(l *listener, d *delivery) *delivery {
	if l.errHandler == nil {
		return d
	}
	return nil
}

// ErrNoRecipient: a handler's Send named no listener (an empty or blank
// to), typically taken from a payload field its sender left empty.
var ErrNoRecipient = errors.New("the message names no recipient")

// payloadLabel names a payload value for a message: its root tag, else its
// Go type.
func (p *Pump) payloadLabel(v any) string {
	if pt, err := p.payloadTypeOfAny(v); err == nil {
		return pt.Name()
	}
	return fmt.Sprintf("%T", v)
}

// unsendable answers a send that cannot be made (its payload cannot be
// encoded, it names no recipient): a handler failure, or with a ref a <huh>
// about that send to the sender itself — but for a plain listener's error
// handler, whose failure is a dead letter (tellFailure), as it would send
// again on that <huh>, for ever.
func (p *Pump) unsendable(t *turn, l *listener, d *delivery, ref string, err error) {
	if ref == "" || d.quietOutput(l) {
		p.handlerFailed(l, d, err)
		return
	}
	p.failed.Add(1)
	round := d.outRound()
	p.later(t, func() {
		p.sendErrorRound(d.conv, d.tbl, l, d.thread, stage.NewHuh(err, nil), d.depth, ref, d.about(ref), err.Error(), err,
			round)
	})
}

// sends is SendAll: every send is a forward of its own, and what they
// journal is one turn, committed together before any is handed on (see
// raw). No sends at all is an Await.
func (p *Pump) sends(l *listener, d *delivery, sends []*xmlpipe.SendResponse) {
	if len(sends) == 0 {
		return
	}
	t := p.newTurn()
	d.turn = t
	for _, s := range sends {
		if s == nil {
			p.handlerFailed(l, d, fmt.Errorf("%w: %s: a nil send in SendAll", failure.ErrHandler, l.Name))
			continue
		}
		p.forward(t, l, d, s)
	}
}

// reply is Respond(payload): prune the chain back to the caller; a caller that
// is not a listener is the external party that started the conversation.
//
// The reply carries the correlation ref of the thread it travels back from
// (correlation.go). An agent caller whose payload is not the reply's gets
// the reply's JSON form as the text of its own payload (asAgentText): its
// model reads text, and a reply in another payload could not reach it.
func (p *Pump) reply(l *listener, d *delivery, payload any) {
	caller, thread, ref, profName, err := p.threads.CallerAs(d.thread)
	if err != nil {
		p.endThread(d.thread) // an exhausted chain is spent
		p.deadLetter(d.conv, d.thread, l.Name, "", "", nil, "respond: "+err.Error())
		return
	}
	cl := d.tbl.lookup(caller)
	var answered []byte // the reply as l answered it, when the agent gets its text
	if cl != nil && cl.Agent && cl != l {
		if pt, err := p.payloadTypeOfAny(payload); err == nil && !cl.Payload.Matches(pt.Name(), pt.Namespace()) {
			if v, ok := asAgentText(cl, pt, payload); ok {
				if _, body, _, err := p.encodePayload(payload); err == nil {
					answered = body
				}
				payload = v
			}
		}
	}
	pt, body, canonical, err := p.encodePayload(payload)
	if err != nil {
		p.handlerFailed(l, d, fmt.Errorf("%w: %s: %w", failure.ErrHandler, l.Name, err))
		return
	}
	env := stage.AppendEnvelopeInReplyTo(make([]byte, 0, len(body)+200+len(ref)), l.Name, caller, thread, ref, body)
	w := &work{raw: env, conv: d.conv, tbl: d.tbl, prof: p.profileIn(d.tbl, d.conv, profName), profSet: true, sender: l, senderThread: d.thread,
		depth: max(d.depth-1, 0), payloadType: pt, canonical: canonical, admitted: d.admitted, parent: d.mark.retain(), prune: d.thread,
		answered: answered, errRound: d.outRound()}
	if cl == nil {
		w.egress = caller
	}
	if l.errHandler == nil || d.quietOutput(l) {
		// A refusal of this reply is told about d: to its caller, or — for
		// a plain listener's error handler, whose reply to the refusal
		// would be refused again, for ever — as a dead letter
		// (tellFailure). An agent hears the refusal of its correction
		// again: its model may correct it once more, up to
		// MaxErrorHandlerRetries times in a row.
		w.answers = d
	}
	p.emit(d, w)
}

// raw is Raw(bytes): every root element of the text becomes its own message,
// routed by root tag (an agent's own tag reaches itself: blind self-iteration).
// Text holding more elements than the listener may send in one turn sends
// none of them (tooManyMessages). What the messages journal — and what their
// failures journal — is one turn: journaled together once they all passed
// the ingress stages (runTurn), so a crash leaves all of it or none.
func (p *Pump) raw(l *listener, d *delivery, text []byte) {
	parts, diags, err := stage.SplitRawMax(text, p.maxMessagesPerTurn(l))
	if tooMany := (*stage.TooManyPayloadsError)(nil); errors.As(err, &tooMany) {
		p.tooManyMessages(l, d, tooMany, text)
		return
	}
	if err == nil && len(parts) == 0 {
		err = fmt.Errorf("%w: no XML element in the output", failure.ErrNoPayload)
	}
	if err != nil {
		p.outputRejected(l, d, err, text)
		return
	}
	if len(diags) > 0 {
		p.log.Info("raw output repaired", "listener", l.Name, "thread", d.thread, "diagnostics", len(diags))
	}
	t := p.newTurn()
	d.turn = t
	reach := d.reach(l)
	var unrouted *UnroutedError // the parts l cannot hear have no route: its caller is told of them at once
	defer func() {
		if unrouted != nil {
			p.later(t, func() { p.tellUnrouted(l, d, unrouted) })
		}
	}()
	for _, part := range parts {
		targets, err := d.tbl.resolve("", part.Namespace, part.Name)
		if err == nil && reach != nil {
			targets, err = reach.mask(targets, l, "", tagKey{part.Namespace, part.Name})
		}
		if err != nil && d.quietOutput(l) {
			p.failed.Add(1)
			p.deadLetterIn(t, d.conv, d.thread, l.Name, "", part.Name, clip(part.Bytes),
				errOutputRefused(l, d.outRound(), err))
			continue
		}
		if err != nil && l.errHandler == nil {
			// l cannot hear that its output has no route: its caller is
			// told, once for all such parts.
			p.failed.Add(1)
			if unrouted == nil {
				unrouted = &UnroutedError{Listener: l.Name}
			}
			unrouted.add(part.Name, err)
			continue
		}
		if err != nil {
			huh, detail, about := stage.NewHuh(err, part.Bytes), errorDetail(diagnosticsOf(err)), d.about("")
			round := d.outRound()
			p.later(t, func() { p.sendErrorRound(d.conv, d.tbl, l, d.thread, huh, d.depth, "", about, detail, err, round) })
			continue
		}
		for _, target := range targets {
			if !l.mayReach(target.Name) {
				p.peerViolationIn(t, l, d, target.Name, "")
				continue
			}
			if p.chainTooDeep(t, l, d, target.Name, "") {
				continue
			}
			child, prof, spent, err := p.extend(d, l, target.Name, "")
			if err != nil {
				p.deadLetterIn(t, d.conv, d.thread, l.Name, target.Name, part.Name, nil, "cannot extend thread: "+err.Error())
				continue
			}
			body := withEmptyNS(part)
			env := stage.AppendEnvelope(make([]byte, 0, len(body)+200), l.Name, target.Name, child, body)
			p.emit(d, &work{raw: env, conv: d.conv, tbl: d.tbl, prof: prof, profSet: true, sender: l, senderThread: d.thread,
				depth: d.depth + 1, admitted: d.admitted, parent: d.mark.retain(), spends: spent, errOutput: d.quietOutput(l),
				errRound: d.outRound(), answers: unheard(l, d)})
		}
	}
}

// maxMessagesPerTurn is how many messages l may send in one Raw output.
func (p *Pump) maxMessagesPerTurn(l *listener) int {
	if l.MaxMessagesPerTurn > 0 {
		return l.MaxMessagesPerTurn
	}
	return p.opts.MaxMessagesPerTurn
}

// tooManyMessages answers raw output holding more messages than the
// listener may send in one turn: none of them is sent, and a SystemError
// saying the limit goes back to the listener on the thread its handler ran
// on, as for any other rejected output, so an agent's model can split its
// work. Output of an error handler is answered as outputRejected says.
func (p *Pump) tooManyMessages(l *listener, d *delivery, e *stage.TooManyPayloadsError, text []byte) {
	p.failed.Add(1)
	p.log.Warn("handler output refused: too many messages", "listener", l.Name, "thread", d.thread,
		"messages", e.Count, "max_messages_per_turn", e.Limit)
	if d.quietOutput(l) {
		p.deadLetter(d.conv, d.thread, l.Name, "", "", clip(text), errOutputRefused(l, d.outRound(), e))
		return
	}
	p.record(Record{Time: p.opts.Clock(), Direction: Outbound, Kind: RecordSystemError, Conversation: d.conv,
		Thread: d.thread, From: l.Name, Listener: l.Name, Envelope: clip(text),
		Diagnostics: []failure.Diagnostic{{Stage: failure.StageExtract, Msg: e.Error()}}, Profile: d.prof.nameOf()})
	p.sendErrorRound(d.conv, d.tbl, l, d.thread, stage.TooManyMessagesError(e.Count, e.Limit), d.depth, "", d.about(""),
		e.Error(), e, d.outRound())
}

// withEmptyNS makes a no-namespace element keep no namespace inside the
// envelope's default namespace (canonical bytes start with "<Name").
func withEmptyNS(part stage.RawPayload) []byte {
	if part.Namespace != "" {
		return part.Bytes
	}
	n := 1 + len(part.Name)
	out := make([]byte, 0, len(part.Bytes)+9)
	out = append(out, part.Bytes[:n]...)
	out = append(out, ` xmlns=""`...)
	return append(out, part.Bytes[n:]...)
}

// recordedAlready reports whether d, a message re-delivered after a restart,
// is in its thread's history already, as its delivery before the crash
// recorded it (the history is restored at start): a slot of the same sender
// and recipient that carries d's journal seq (Slot.Seq). Two identical
// messages are two messages: one journaled before d but recorded after it
// was journaled is not d. A slot with no seq (recorded without a journal
// that takes delivery marks) is matched as before seqs were recorded: by
// its bytes, recorded no earlier than d was journaled.
func (p *Pump) recordedAlready(d *delivery, to string) bool {
	if d.journaled.IsZero() {
		return false
	}
	c, ok := p.context.Thread(d.thread)
	if !ok {
		return false
	}
	seq := d.mark.messageSeq()
	for _, s := range c.Slots() {
		if s.From != d.from || s.To != to {
			continue
		}
		if seq > 0 && s.Seq > 0 {
			if s.Seq == seq {
				return true
			}
			continue
		}
		if !s.Time.Before(d.journaled) && bytes.Equal(s.Raw, d.payloadBytes) {
			return true
		}
	}
	return false
}
