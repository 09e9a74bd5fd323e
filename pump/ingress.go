package pump

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// Inject admits an external envelope (raw bytes from a transport or client).
// While the pump's admission budget is used up, or the message's target
// listener holds its share of it, it waits for room, at most
// Options.AdmitWait or until ctx's deadline, and then fails with a
// *BusyError (ErrBusy; see Options.MaxInFlight); it returns once the
// message is queued. Failures of the message itself are delivered as <huh>
// events to out. Its ingress stages run on the calling goroutine (waiting
// for a free ingress slot, within the same bound). The from of an external envelope may never be system, core or
// a listener's name.
func (p *Pump) Inject(ctx context.Context, raw []byte, out Outlet) error {
	return p.inject(ctx, raw, out, nil)
}

// InjectWait is Inject that also waits for the ingress stages and returns the
// thread the message travels on, or the message's *failure.Failure. With a
// DurableJournal it returns only once the message's journal record is
// committed (a durable acknowledgement: a crash after it loses nothing);
// ErrNotDurable when the record could not be committed.
func (p *Pump) InjectWait(ctx context.Context, raw []byte, out Outlet) (string, error) {
	thread, seq, err := p.injectQueued(ctx, raw, out)
	if err != nil || seq <= 0 || p.durable == nil {
		return thread, err
	}
	if err := p.durable.WaitDurable(ctx, seq); err != nil {
		return thread, fmt.Errorf("%w: %w", ErrNotDurable, err)
	}
	return thread, nil
}

// injectQueued is InjectWait up to the message's journal record: it returns
// once the ingress stages ran and the record was handed to the journal
// (with a DurableJournal, queued for a commit that has not happened yet),
// with the record's seq (0 when it was not journaled).
func (p *Pump) injectQueued(ctx context.Context, raw []byte, out Outlet) (string, int64, error) {
	type result struct {
		thread string
		seq    int64
		err    error
	}
	ch := make(chan result, 1)
	if err := p.inject(ctx, raw, out, func(thread string, seq int64, err error) { ch <- result{thread, seq, err} }); err != nil {
		return "", 0, err
	}
	select {
	case r := <-ch:
		return r.thread, r.seq, r.err
	case <-ctx.Done():
		return "", 0, ctx.Err()
	}
}

// ErrNotDurable reports an accepted message whose journal record could not be
// committed (it was admitted just before the storage began to fail; after
// that, new messages are refused up front: ErrCannotJournal). The message
// was handed on — its handlers run, its answer may come — but it was not
// acknowledged, and a restart will not deliver it again.
var ErrNotDurable = errors.New("pump: message handed on but not journaled; it will not survive a restart")

func (p *Pump) inject(ctx context.Context, raw []byte, out Outlet, done func(string, int64, error)) error {
	if !p.started.Load() {
		return ErrNotStarted
	}
	if err := p.storageRefusal(); err != nil {
		return err // before admission: nothing of the message is read or kept
	}
	who := principalOf(ctx)
	user := userKey(who)
	deadline := p.admitDeadline()
	if err := p.admit(ctx, deadline, user); err != nil {
		p.countRefusal(nil, err)
		return err
	}
	w := &work{raw: raw, external: true, outlet: out, admitted: p.opts.Clock(), done: done, principal: who, user: user,
		ctx: ctx, deadline: deadline, profile: profileOf(ctx, who), accepted: acceptedOf(ctx)}
	if !p.processInline(w) {
		// Every ingress slot is busy (or the pump closing): the injector
		// waits for one, so that it — not an ingress worker, which never
		// waits — can wait for room at its target.
		if err := p.ingressSlot(ctx, deadline); err != nil {
			p.releaseWork(w)
			p.countRefusal(nil, err)
			return err
		}
		p.process(w)
		<-p.ingressSlots
		yieldToWoken(w)
	}
	return w.busy // nil, or the target was at its share for as long as the wait allowed
}

// ingressSlot takes an ingress slot for an injector, waiting until deadline
// at most (then a *BusyError); ErrClosed once the pump shuts down.
func (p *Pump) ingressSlot(ctx context.Context, deadline time.Time) error {
	if p.closing.Load() {
		return ErrClosed
	}
	select {
	case p.ingressSlots <- struct{}{}:
		return nil
	default:
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case p.ingressSlots <- struct{}{}:
		if p.closing.Load() {
			<-p.ingressSlots
			return ErrClosed
		}
		return nil
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return p.busy(kindIngress, "ingress stages full", ctx.Err())
		}
		return ctx.Err()
	case <-t.C:
		return p.busy(kindIngress, "ingress stages full", nil)
	}
}

// processInline runs the ingress stages of w on the calling goroutine when an
// ingress slot is free, sparing the hand-off to an ingress worker (a
// goroutine wake-up, the largest part of the latency of an idle pump). It
// reports false, doing nothing, when every slot is busy or the pump is
// closing; the caller then queues w.
func (p *Pump) processInline(w *work) bool {
	if p.closing.Load() {
		return false
	}
	select {
	case p.ingressSlots <- struct{}{}:
	default:
		return false
	}
	p.process(w)
	<-p.ingressSlots
	yieldToWoken(w)
	return true
}

// Send builds an envelope from an external sender (from) to the listener to,
// with payload encoded by its Go type, on a fresh thread, and injects it. It
// returns the thread id (the conversation id).
func (p *Pump) Send(ctx context.Context, from, to string, payload any, out Outlet) (string, error) {
	pt, err := p.payloadTypeOf(payload)
	if err != nil {
		return "", err
	}
	body, err := pt.AppendPayload(nil, payload)
	if err != nil {
		return "", err
	}
	return p.SendEnvelope(ctx, Envelope{From: from, To: to, Payload: body}, out)
}

// SendSystem emits a message from the organism itself ("system") to listener
// to on a new root thread (the boot message); it returns the thread id.
func (p *Pump) SendSystem(to string, payload any) (string, error) {
	if !p.started.Load() {
		return "", ErrNotStarted
	}
	pt, err := p.payloadTypeOf(payload)
	if err != nil {
		return "", err
	}
	body, err := pt.AppendPayload(nil, payload)
	if err != nil {
		return "", err
	}
	thread := stage.NewThreadID()
	if err := p.threads.Begin(thread, "system", to); err != nil {
		return "", err
	}
	env := stage.AppendEnvelope(nil, "system", to, thread, body)
	tbl := p.convStart(thread, nil, p.pinRoutes())
	p.convHold(thread)
	p.hold()
	if !p.work.push(&work{raw: env, conv: thread, tbl: tbl, payloadType: pt, admitted: p.opts.Clock()}) {
		p.release()
		p.convDone(thread)
		return "", ErrClosed
	}
	return thread, nil
}

func (p *Pump) ingressWorker() {
	defer p.wg.Done()
	for {
		w, ok := p.work.pop()
		if !ok {
			return
		}
		if p.stopNow.Load() {
			p.dropWork(w)
			continue
		}
		p.ingressSlots <- struct{}{}
		if w.batch != nil {
			p.turnStages(w.batch, w.turn)
			<-p.ingressSlots
			p.finishTurn(w.batch, w.turn)
			continue
		}
		p.process(w)
		<-p.ingressSlots
		yieldToWoken(w)
	}
}

// dropWork abandons work queued for the ingress stages in an immediate
// shutdown: an external message not journaled yet is refused to its sender
// (ErrClosed); the message whose handler emitted internal work stays
// unmarked, so Recover re-delivers it and it is emitted again.
func (p *Pump) dropWork(w *work) {
	if w.batch != nil { // a turn: nothing of it is journaled
		for _, o := range w.batch {
			p.dropWork(o)
		}
		return
	}
	p.releaseWork(w)
	if w.done != nil {
		w.done("", 0, ErrClosed)
	}
}

// yieldToWoken gives up the processor after the ingress stages of w woke an
// idle listener worker, so that worker runs now.
//
// The Go scheduler puts a goroutine woken by a running one in that
// processor's run-next slot, where it waits until the waker blocks; an idle
// processor may take it over only after a back-off. A waker that goes on
// working (an injector catching up, a worker popping its next delivery, a
// transport reading a burst) thus left the woken worker waiting while the
// other core idled: in the bench's latency phase on this 2-core VM, 1–2 ms
// at the 99th percentile per hop. Yielding runs the woken worker at once and
// puts the waker on the global run queue, where an idle processor takes it
// without that back-off. It costs a scheduler round trip (well under 1 µs)
// per hand-off to an idle worker, and nothing when workers are busy.
func yieldToWoken(w *work) {
	if w.wokeWorker.Load() {
		runtime.Gosched()
	}
}

// ingressHop is what process shares with the hand-off it builds (and
// turnStart with a held turn): one allocation for the variables both
// change, not one each.
type ingressHop struct {
	// tbl is the routing snapshot the message routes in; pin, when set,
	// the snapshot process pinned for it (external work).
	tbl, pin *table
	// conv and threads are the message's conversation and the thread of
	// each target.
	conv    string
	threads []string
	// thread and decoded hold a single target's thread and decoded
	// payload.
	thread  [1]string
	decoded [1]any
}

// process runs one envelope through the ingress stages and hands it to its
// target listeners' pipelines. For an output of a turn (w.turn), what it
// journals joins the turn's group and everything after — the hand-off, the
// events, the accounting of w — waits for the group (see turn).
func (p *Pump) process(w *work) {
	t := w.turn
	defer p.settleLater(t, w)
	// tbl is the routing snapshot: internal work's conversation's, or for
	// external work the current one, pinned until convStart takes the pin
	// (or dropped when the message is refused).
	h := &ingressHop{tbl: w.tbl}
	if w.external {
		h.pin = p.pinRoutes()
		h.tbl = h.pin
		defer func() {
			if h.pin != nil {
				p.unpinTable(h.pin)
			}
		}()
	} else if h.tbl == nil {
		h.tbl = p.routes.Load()
	}
	if !w.external {
		if p.killed(w.conv) {
			from := ""
			if w.sender != nil {
				from = w.sender.Name
			}
			p.deadLetterIn(t, w.conv, w.senderThread, from, "", "", clip(w.raw), p.dropReason(w.conv))
			return
		}
	}
	read := p.ingress.Read
	if w.canonical {
		read = p.ingress.ReadCanonical
	}
	t0 := p.stageStart()
	m, err := read(w.raw)
	if err != nil {
		p.stageEnd(StageRead, "", "", t0, true)
		p.rejectRead(w, err)
		return
	}
	p.stageEnd(StageRead, "", m.Thread, t0, false)
	defer m.Close() // what waits for a turn uses m's Envelope fields only

	if w.external {
		if p.refuseImpostor(w, m) {
			return
		}
		if err := checkSender(h.tbl, m.From); err != nil {
			p.rejectMessage(w, m, "", err)
			return
		}
		if w.recovered == 0 {
			if err := p.refuseKilled(w, m.Thread); err != nil {
				p.rejectMessage(w, m, "", err)
				return
			}
		}
	}
	if m.PayloadNS == p.core.Huh.Namespace() && (m.PayloadName == p.core.Huh.Name() || m.PayloadName == p.core.Refusal.Name()) ||
		m.PayloadNS == "" && m.PayloadName == p.core.SystemError.Name() {
		if !w.external {
			p.deliverError(w, m, h.tbl)
			return
		}
	}
	if w.egress != "" {
		p.egress(w, m)
		return
	}
	// prof is the profile of the thread the message travels on: for an
	// external message its thread's (a new one's: what its sender asks
	// for) narrowed by what its sender asks for, for internal work what
	// its emitter knew, or the thread's.
	prof, profName := w.prof, ""
	switch {
	case w.external:
		if w.profile != "" || w.recovered != 0 || h.tbl.profiled() {
			stored, _ := p.threads.Profile(m.Thread)
			profName = registry.NarrowProfile(stored, w.profile)
			prof = p.profileIn(h.tbl, m.Thread, profName)
		}
	case !w.profSet:
		stored, _ := p.threads.Profile(m.Thread)
		prof = p.profileIn(h.tbl, w.conv, stored)
	}
	targets, err := p.route(h.tbl, prof, w, m)
	if err != nil {
		p.rejectMessage(w, m, targetName(targets), err)
		return
	}
	first := targets[0]
	if w.external && w.recovered == 0 {
		if l, err := p.roomAt(w, targets); err != nil {
			p.refuseBusy(w, m, l, err)
			return
		}
	}
	pb, err := m.PayloadBytes()
	if err != nil {
		p.rejectMessage(w, m, first.Name, err)
		return
	}
	var created bool
	h.conv, h.threads, created, err = p.assignThreads(h.thread[:0], w, m, targets)
	if err != nil {
		p.rejectMessage(w, m, first.Name, err)
		return
	}
	if w.external && w.recovered == 0 {
		if err := p.killedMeanwhile(m.Thread, h.conv, created); err != nil {
			p.rejectMessage(w, m, first.Name, err)
			return
		}
	}
	if w.external && !created {
		// An external message continuing a conversation in flight routes
		// within the snapshot that conversation started with.
		if own := p.convRoutes(h.conv); own != nil {
			prev := h.tbl
			p.unpinTable(h.pin)
			if h.pin, h.tbl = own, own; own != prev {
				prof = p.profileIn(h.tbl, h.conv, profName)
				if targets, err = p.route(h.tbl, prof, w, m); err != nil {
					p.rejectMessage(w, m, targetName(targets), err)
					return
				}
				first = targets[0]
				h.threads = h.threads[:0]
				for range targets {
					h.threads = append(h.threads, m.Thread)
				}
			}
		}
	}
	decoded := h.decoded[:0]
	if len(targets) > len(h.decoded) {
		decoded = make([]any, 0, len(targets))
	}
	decoded = decoded[:len(targets)]
	for i, l := range targets {
		v, err := l.Payload.Decode(pb)
		if err != nil {
			p.rejectMessage(w, m, l.Name, err)
			return
		}
		decoded[i] = v
	}
	dir := Outbound
	if w.external {
		dir = Inbound
	}
	inReplyTo := "" // only the pump writes it, and only internal envelopes are the pump's
	if !w.external {
		inReplyTo = m.InReplyTo
	}
	// deliver hands the message, journaled as seq, to its targets.
	deliver := func(seq int64) {
		// A reply's thread ends once the reply is journaled (queued
		// after it, on a journal that commits in order): ended before, a
		// crash between the two commits left the message the reply
		// answers undelivered on an ended thread, which recovery drops,
		// and the reply lost.
		p.pruneAccepted(w)
		mark := p.newDeliveryMark(seq, len(targets))
		if mark != nil && w.recovered != 0 {
			mark.recovered = true // MessageSeq
		}
		// The conversation stays in flight until every target was handed
		// its delivery: one refused or dropped (a kill) before the next is
		// counted does not end it, nor forget that it was killed.
		p.convHold(h.conv)
		defer p.convDone(h.conv)
		if w.external {
			p.convTurn(h.conv, seq)
		}
		if len(m.Diagnostics) > 0 {
			p.log.Info("message repaired or amended", "thread", m.Thread, "from", m.From, "listener", first.Name, "seq", seq,
				"diagnostics", len(m.Diagnostics))
		}
		for i, l := range targets {
			d := &delivery{conv: h.conv, thread: h.threads[i], from: m.From, to: l.Name, payloadName: m.PayloadName,
				payload: decoded[i], payloadBytes: pb, depth: w.depth, senderOutside: w.external, admitted: w.admitted,
				senderThread: w.senderThread, mark: mark, tbl: h.tbl, prof: prof, at: l, user: w.user, inReplyTo: inReplyTo,
				journaled: w.journaled}
			if p.gateStops(w, m, h.tbl, l, d, seq) {
				continue // refused or held by the delivery gate (gate.go)
			}
			p.holdAdmitted(w, d)
			p.convHold(h.conv)
			if w.external && prof != nil {
				p.convProfile(h.conv, prof.name) // what its completion event tells
			}
			p.publish(nil, Event{Kind: EventMessage, Time: p.opts.Clock(), Conversation: h.conv, Thread: d.thread,
				From: m.From, To: m.To, Listener: l.Name, PayloadName: m.PayloadName, Payload: decoded[i], Envelope: m.Canonical,
				Profile: prof.nameOf()})
			ok, woke := p.enqueue(l, d)
			if woke {
				w.wokeWorker.Store(true)
			}
			if !ok {
				p.releaseDelivery(d)
				p.convDone(h.conv)
				p.deadLetter(h.conv, m.Thread, m.From, l.Name, m.PayloadName, m.Canonical, "listener pipeline closed")
			}
		}
		if w.accepted != nil {
			w.accepted(bytes.Clone(m.Canonical))
		}
		if w.done != nil {
			w.done(m.Thread, seq, nil)
		}
	}
	if w.external {
		deliver = p.turnStart(w, m, h, targets, deliver)
	}
	if w.recovered != 0 {
		p.later(t, func() { deliver(w.recovered) })
		return
	}
	var journaled string // the thread's profile, as the journal records it
	if prof != nil {
		journaled = prof.name
	}
	p.journalIn(t, Record{Direction: dir, Kind: RecordMessage, Conversation: h.conv, Thread: m.Thread, From: m.From,
		To: m.To, Listener: first.Name, PayloadTag: m.PayloadName, Envelope: m.Canonical, Diagnostics: m.Diagnostics,
		Profile: journaled}, deliver)
}

// Resolve returns the names of the listeners a message would reach: with to,
// the listener of that name whose root tag matches; without, every listener of
// the root tag. External messages never reach the organism's own system
// listeners, unless one is Public. Errors wrap failure.ErrNoRoute.
func (p *Pump) Resolve(to, ns, name string, external bool) ([]string, error) {
	ls, err := resolveIn(p.routes.Load(), to, ns, name, external)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.Name
	}
	return out, nil
}

// route resolves m's targets in tbl, masked by the thread's profile prof
// (a listener outside it has no route, as one that does not exist; an
// answer travelling back to its caller is not masked), and validates the
// payload against the first one's contract (a broadcast group shares one
// payload type). On a validation failure it returns the targets with the
// error.
func (p *Pump) route(tbl *table, prof *profile, w *work, m *stage.Inbound) ([]*listener, error) {
	masked := prof != nil && w.prune == ""
	if l := tbl.lookup(m.To); masked && l != nil && l != w.sender && !prof.reaches(l) {
		// Masked before its payload is checked against it: "greeter takes
		// <Greeting>" would tell the sender that greeter exists.
		p.log.Info("message outside its thread's profile: refused as having no route", "thread", m.Thread,
			"from", m.From, "to", m.To, "payload", m.PayloadName, "profile", prof.name)
		return nil, noRoute(fmt.Sprintf("no listener named %q", m.To))
	}
	targets, err := resolveIn(tbl, m.To, m.PayloadNS, m.PayloadName, w.external)
	if err != nil {
		return nil, err
	}
	if masked {
		if targets, err = prof.mask(targets, w.sender, m.To, tagKey{m.PayloadNS, m.PayloadName}); err != nil {
			p.log.Info("message outside its thread's profile: refused as having no route", "thread", m.Thread,
				"from", m.From, "to", m.To, "payload", m.PayloadName, "profile", prof.name)
			return nil, err
		}
	}
	first := targets[0]
	t0 := p.stageStart()
	err = m.ValidatePayload(first.Payload)
	p.stageEnd(StageValidate, first.Name, m.Thread, t0, err != nil)
	return targets, err
}

// targetName names the first of targets ("" for none), for a rejection.
func targetName(targets []*listener) string {
	if len(targets) == 0 {
		return ""
	}
	return targets[0].Name
}

// resolveIn resolves a message's targets in one routing snapshot.
func resolveIn(tbl *table, to, ns, name string, external bool) ([]*listener, error) {
	ls, err := tbl.resolve(to, ns, name)
	if err != nil || !external {
		return ls, err
	}
	for _, l := range ls {
		if l.system && !l.Public {
			return nil, noRoute(l.Name + " is internal to the organism")
		}
	}
	return ls, nil
}

// CheckSender reports whether an external message may carry this <from>: it
// can never claim the organism's own identities (system, core) or a
// listener's name (reference quirk Q32 fixed).
func (p *Pump) CheckSender(from string) error { return checkSender(p.routes.Load(), from) }

// checkSender is CheckSender against one routing snapshot.
func checkSender(tbl *table, from string) error {
	why := ""
	switch l := tbl.lookup(from); {
	case reserved[lower(from)]:
		why = "is reserved for the organism"
	case l != nil:
		// Said plainly: a program whose listener is called as its Ask
		// sender would otherwise not know why every Ask is refused.
		why = fmt.Sprintf("is the name of listener %q: only it sends as %q", l.Name, l.Name)
	default:
		return nil
	}
	return &failure.Failure{Stage: failure.StageExtract, Err: failure.ErrForbiddenSender,
		Diagnostics: []failure.Diagnostic{{Stage: failure.StageExtract, Msg: fmt.Sprintf("external <from> %q %s", from, why)}}}
}

// assignThreads registers an external conversation, or checks that an internal
// message's thread is alive. It returns the conversation, one thread per
// target (in dst's array when it has room), and whether an external message
// started a new conversation.
func (p *Pump) assignThreads(dst []string, w *work, m *stage.Inbound, targets []*listener) (string, []string, bool, error) {
	threads := dst[:0]
	if cap(threads) < len(targets) {
		threads = make([]string, len(targets))
	} else {
		threads = threads[:len(targets)]
	}
	if !w.external {
		if !p.threads.Known(m.Thread) {
			return "", nil, false, fmt.Errorf("%w: thread %s has ended", errThreadEnded, m.Thread)
		}
		for i := range targets {
			threads[i] = m.Thread
		}
		return w.conv, threads, false, nil
	}
	target := "" // a broadcast's origin is [organism, from]; each member extends it
	if len(targets) == 1 {
		target = targets[0].Name
	}
	hops := enteredHops(w)
	if err := p.enteringTooDeep(hops); err != nil {
		return "", nil, false, err
	}
	conv, created, _, err := p.threads.JoinAsAt(m.Thread, m.From, target, w.profile, hops)
	if err != nil {
		return "", nil, false, err
	}
	if !created || len(targets) == 1 {
		for i := range targets {
			threads[i] = m.Thread
		}
		return conv, threads, created, nil
	}
	for i, l := range targets {
		t, err := p.threads.Extend(m.Thread, l.Name)
		if err != nil {
			return "", nil, false, err
		}
		threads[i] = t
	}
	return m.Thread, threads, true, nil
}

var errThreadEnded = errors.New("thread ended")

// refuseBusy refuses a new external message whose target listener l holds
// its share of the admission budget: Inject and InjectWait return err (a
// *BusyError); the outlet of one read on an ingress worker gets the <huh>.
// Nothing of it is kept. It is counted and logged with the others there
// (see Refusals), not one line per message.
func (p *Pump) refuseBusy(w *work, m *stage.Inbound, l *listener, err error) {
	p.countRefusal(l, err)
	p.log.Debug("message refused: busy", "thread", m.Thread, "from", m.From, "error", err)
	switch {
	case w.done != nil:
		w.done("", 0, err)
	case w.ctx != nil:
		w.busy = err // Inject returns it
	default:
		p.fail(w, m.Thread, m.From, "", err, diagnosticsOf(err))
	}
}

// egress validates an internal reply addressed to an external party and hands
// it to the conversation's outlet.
func (p *Pump) egress(w *work, m *stage.Inbound) {
	if w.payloadType != nil {
		if err := m.ValidatePayload(w.payloadType); err != nil {
			p.rejectMessage(w, m, "", err)
			return
		}
	}
	var value any
	if w.payloadType != nil {
		if pb, err := m.PayloadBytes(); err == nil {
			value, _ = w.payloadType.Decode(pb)
		}
	}
	prof := p.liveProfile(m.Thread) // the thread may be pruned before the event is published
	if w.profSet {
		prof = w.prof.nameOf()
	}
	p.journalIn(w.turn, Record{Direction: Outbound, Kind: RecordMessage, Conversation: w.conv, Thread: m.Thread,
		From: m.From, To: m.To, PayloadTag: m.PayloadName, Envelope: m.Canonical, Profile: prof}, func(seq int64) {
		p.pruneAccepted(w)                  // once the reply is journaled (see route's deliver)
		p.newDeliveryMark(seq, 1).release() // handed to the outlet: nothing left to deliver
		p.emitToConv(w.conv, Event{Kind: EventReply, Time: p.opts.Clock(), Conversation: w.conv, Thread: m.Thread,
			From: m.From, To: m.To, PayloadName: m.PayloadName, Payload: value, Envelope: m.Canonical, Profile: prof})
		p.processed.Add(1)
	})
}

// pruneAccepted ends the thread an accepted reply travelled back from.
func (p *Pump) pruneAccepted(w *work) {
	if w.prune == "" {
		return
	}
	if _, _, err := p.threads.Prune(w.prune); err != nil && !errors.Is(err, registry.ErrUnknownThread) &&
		!errors.Is(err, registry.ErrChainExhausted) {
		p.log.Warn("prune", "thread", w.prune, "error", err)
	}
}

// deliverError routes a pump-generated <huh>/SystemError/<refusal> to the
// listener named in <to>, through its optional error handler; a listener
// without one cannot hear it, and its caller is told instead (relayError).
func (p *Pump) deliverError(w *work, m *stage.Inbound, tbl *table) {
	l := tbl.lookup(m.To)
	pt := p.core.Huh
	switch {
	case m.PayloadName == p.core.SystemError.Name() && m.PayloadNS == "":
		pt = p.core.SystemError
	case m.PayloadName == p.core.Refusal.Name():
		pt = p.core.Refusal
	}
	v, pb, err := m.Decode(pt)
	if err != nil || l == nil {
		reason := "error message for an unknown listener"
		if err != nil {
			reason = err.Error()
		}
		p.tellHeld(w)
		p.deadLetterIn(w.turn, w.conv, m.Thread, m.From, m.To, m.PayloadName, m.Canonical, reason)
		return
	}
	kind := RecordHuh
	de := &xmlpipe.DeliveryError{}
	if w.note != nil {
		de.Detail = w.note.detail
	}
	switch e := v.(type) {
	case *xmlpipe.Huh:
		de.Huh = e
	case *xmlpipe.Refusal:
		de.Refusal = e
		kind = RecordRefusal
	default:
		de.System = v.(*xmlpipe.SystemError)
		kind = RecordSystemError
	}
	p.journalIn(w.turn, Record{Direction: Outbound, Kind: kind, Conversation: w.conv, Thread: m.Thread, From: m.From, To: m.To,
		Listener: l.Name, PayloadTag: m.PayloadName, Envelope: m.Canonical, Profile: p.workProfile(w, m.Thread)}, func(int64) {
		if l.errHandler == nil {
			// l cannot hear it: the party it works for is told instead.
			p.processed.Add(1)
			if !p.relayError(w, l, m.Thread, v, tbl) {
				p.tellHeld(w)
				p.log.Warn("error delivered to a listener without an error handler", "listener", l.Name,
					"thread", m.Thread, "payload", m.PayloadName)
			}
			return
		}
		p.tellHeld(w) // l took an error handler since (a reload): it hears it itself
		if de.Refusal == nil {
			if r := p.failureRefused(w, m, l, pb, de.Detail); r != nil {
				de = &xmlpipe.DeliveryError{Refusal: r} // the failure's text is not to reach l
			}
		}
		d := &delivery{conv: w.conv, thread: m.Thread, from: m.From, to: l.Name, payloadName: m.PayloadName, payload: v,
			payloadBytes: pb, errPayload: de, errRound: w.errRound, inReplyTo: m.InReplyTo, depth: w.depth, admitted: w.admitted,
			tbl: tbl, at: l}
		if name, _ := p.threads.Profile(m.Thread); name != "" {
			d.prof = p.profileIn(tbl, w.conv, name)
		}
		p.holdDelivery(d)
		p.convHold(w.conv)
		ok, woke := p.enqueue(l, d)
		w.wokeWorker.Store(woke)
		if !ok {
			p.releaseDelivery(d)
			p.convDone(w.conv)
			p.deadLetter(w.conv, m.Thread, m.From, l.Name, m.PayloadName, m.Canonical, "listener pipeline closed")
		}
	})
}
