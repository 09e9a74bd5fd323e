package federation

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// onFrame handles a text frame: the peer's acknowledgement of one of ours.
// It reports false for a frame of a type it does not know, which the link
// logs (junkFrames).
func (g *gateway) onFrame(f frame) bool {
	if g.m.frameHook != nil {
		g.m.frameHook(f)
	}
	switch f.Type {
	case frameAck:
		g.acked(f.ID)
	case frameNack:
		g.log.Warn("federation: the peer refused an envelope", "id", f.ID, "error", f.Error)
		g.m.refusal(g.name, RefusedByPeer)
		g.acked(f.ID)
		if f.Reason == ReasonBusy {
			g.refusedWith(f.ID, busyRefusal(g.name, f.Error, f.RetryAfter))
		} else {
			g.refused(f.ID, f.Error, f.Reason)
		}
	default:
		return false
	}
	return true
}

// deliver dispatches one envelope from the peer, in the link's order, once
// checkInbound verified it. Every refusal is logged as a security event
// (those by link id through the link's refusals, a line a minute per
// reason) and, where the sender waits for it, answered with a nack. What it
// processed is acknowledged once its hash is durable (markSeen).
func (g *gateway) deliver(c *conn, in *inbound) {
	if in.verr != nil {
		id := ""
		if in.e != nil {
			id = in.e.Link.ID
		}
		if id == "" { // no envelope: nothing to answer, and a peer may send such frames without end
			c.refusedJunk("federation: security: envelope refused: signature", "peer", Fingerprint(g.peerKey()), "error", in.verr)
		} else {
			c.refusedEnvelope(RefusedSignature, "federation: security: envelope refused: signature",
				"peer", Fingerprint(g.peerKey()), "id", id, "error", in.verr)
		}
		g.m.refusal(g.name, RefusedSignature)
		if id != "" {
			c.acks.owe(id)
			c.acks.send(frame{Type: frameNack, ID: id, Error: "signature does not verify"})
		}
		return
	}
	if in.perr != nil {
		c.refusedJunk("federation: security: envelope refused", "error", in.perr)
		g.m.refusal(g.name, RefusedMalformed)
		return
	}
	e := in.e
	now := g.m.now()
	if e.Link.Kind != KindMeta && e.Link.Kind != KindMetaAnswer {
		// What is owed for it is paid by the frame that acknowledges or
		// refuses it, or forgiven where none will (drain waits for it).
		c.acks.owe(e.Link.ID)
	}
	if e.From != c.peer.organism { // never "": a handshake naming none is refused
		// Signed by the peer, claiming to be from another organism: the
		// claim is never taken (what the peer sends enters from this
		// gateway's name), but a peer that makes it is misconfigured or
		// compromised, and its operator is told so rather than served.
		why := fmt.Sprintf("<from> %q is not the peer's organism %q (its handshake)", e.From, c.peer.organism)
		c.refusedEnvelope(RefusedForgedFrom, "federation: security: envelope refused: <from> is not the peer",
			"id", e.Link.ID, "from", e.From, "peer", c.peer.organism)
		g.m.refusal(g.name, RefusedForgedFrom)
		c.acks.send(frame{Type: frameNack, ID: e.Link.ID, Error: why})
		return
	}
	age := now.Sub(e.Link.Sent)
	if age > g.m.stale {
		why := "stale envelope"
		if apart := clockApart(c.peer); c.peer.ahead < 0 && apart != "" {
			// Not (only) an old envelope: the sender's clock lags, and
			// every envelope it sends may be refused so.
			why += fmt.Sprintf(": the sender's clock is %s the receiver's (their handshake)", apart)
		}
		c.refusedEnvelope(RefusedStale, "federation: security: stale envelope refused", "id", e.Link.ID, "sent", e.Link.Sent,
			"why", why)
		g.m.refusal(g.name, RefusedStale)
		c.acks.send(frame{Type: frameNack, ID: e.Link.ID, Error: why})
		return
	}
	if -age > futureSkew {
		// Not an old envelope: the peer's clock runs ahead. Said so, to
		// both operators, as every envelope of that peer is refused.
		why := fmt.Sprintf("envelope sent %s in the future: the clocks of the two organisms differ by more than %s",
			(-age).Round(time.Second), futureSkew)
		c.refusedEnvelope(refusedFuture, "federation: security: stale envelope refused: "+why, "id", e.Link.ID,
			"sent", e.Link.Sent)
		g.m.refusal(g.name, RefusedStale)
		c.acks.send(frame{Type: frameNack, ID: e.Link.ID, Error: "stale envelope: " + why})
		return
	}
	if e.Link.Kind == KindExportsChanged {
		g.envelopeSeen(DirectionIn, e.Link.Kind)
		g.refreshSoon()
		return
	}
	if e.Link.Kind == KindMeta || e.Link.Kind == KindMetaAnswer {
		g.envelopeSeen(DirectionIn, e.Link.Kind)
		if e.Link.Kind == KindMeta && !g.m.started.Load() {
			// A question on the link made before Start (refreshOnce)
			// waits for it, off the delivery: answered now, it would
			// miss the listeners not in place yet.
			c.hwg.Add(1)
			go func() {
				defer c.hwg.Done()
				select {
				case <-g.m.startedCh:
					g.onMeta(c, e)
				case <-c.done:
				}
			}()
			return
		}
		c.handle(func() { g.onMeta(c, e) })
		return
	}
	if in.serr != nil {
		g.log.Error("federation: cannot check a received envelope; not acknowledged", "id", e.Link.ID, "error", in.serr)
		c.acks.forgive(e.Link.ID)
		return
	}
	// For the kinds whose hash is recorded, a copy of an envelope not
	// acknowledged yet is acknowledged with it (unsettled.go). Checking for
	// a copy and recording an original are one step, so that a copy on
	// another link cannot slip between them.
	var orig *original
	if knownSeenKind(e.Link.Kind) {
		var joined bool
		var err error
		orig, joined, in.dup, err = g.unsettled.claim(in.hash, c, e.Link.ID, now, func() (bool, error) {
			if !in.inMemory {
				return in.dup, nil
			}
			dup, ok := g.m.db.recent.checkSeen(in.hash, e.Link.Sent, now)
			if !ok { // it left the window since the check: the table decides
				return g.m.db.seenHash(in.hash, e.Link.Sent)
			}
			return dup, nil
		})
		if err != nil {
			g.log.Error("federation: cannot check a received envelope; not acknowledged", "id", e.Link.ID, "error", err)
			c.acks.forgive(e.Link.ID)
			return
		}
		if joined {
			// From the authenticated peer itself: a resend whose original
			// is still being processed, not an attack.
			g.log.Info("federation: copy of an envelope being received dropped (acknowledged with it)",
				"id", e.Link.ID, "kind", e.Link.Kind)
			g.m.refusal(g.name, RefusedDuplicate)
			return
		}
	}
	if in.dup {
		// The signature is the trusted peer's, on its authenticated link:
		// a resend after an acknowledgement was lost with a link (a crash,
		// a link cut, a stop whose drain ran out of time), not an attack. Acknowledged again and dropped; counted as duplicate.
		g.log.Info("federation: copy of an envelope already received dropped (acknowledged again)",
			"id", e.Link.ID, "kind", e.Link.Kind)
		g.m.refusal(g.name, RefusedDuplicate)
		c.acks.send(frame{Type: frameAck, ID: e.Link.ID, Duplicate: true})
		return
	}
	g.envelopeSeen(DirectionIn, e.Link.Kind)
	switch e.Link.Kind {
	case KindCall:
		// Until this side asked the peer for its imports the calls
		// wait, off the delivery: what the peer answers it (a meta
		// answer) comes after them on the same link (ready.go). One not
		// processed as the link ends is sent again on the next.
		c.whenReady(func() { g.onCall(c, e) }, func() { c.acks.forgive(e.Link.ID) })
	case KindReply, KindHuh, KindEnd:
		id, hash, sent := e.Link.ID, in.hash, e.Link.Sent
		g.onAnswer(e, in.b, func() { g.ackOnceSeen(c, id, hash, sent, now, orig) })
	case KindCancel:
		// Behind the calls that wait for the link to be ready: its own
		// may be one of them (ready.go).
		id, hash, sent := e.Link.ID, in.hash, e.Link.Sent
		c.behindHeld(func() {
			g.onCancel(e)
			g.ackOnceSeen(c, id, hash, sent, now, orig)
		}, func() {
			g.unsettled.drop(orig)
			c.acks.forgive(id)
		})
	default:
		c.refusedEnvelope(RefusedUnknownKind, "federation: security: envelope of unknown kind refused", "id", e.Link.ID,
			"kind", e.Link.Kind)
		g.m.refusal(g.name, RefusedUnknownKind)
		c.acks.send(frame{Type: frameNack, ID: e.Link.ID, Error: "unknown kind"})
	}
}

// ackOnceSeen records the envelope's hash and acknowledges id once that is
// durable (a hash that could not be recorded is logged; the envelope was
// processed, so it is acknowledged all the same), with the copies of it
// that came meanwhile (orig).
func (g *gateway) ackOnceSeen(c *conn, id string, hash [32]byte, sent, now time.Time, orig *original) {
	g.m.db.markSeenHash(hash, sent, now, func(err error) {
		if err != nil {
			g.log.Warn("federation: received envelope not recorded", "id", id, "error", err)
		}
		c.acks.send(frame{Type: frameAck, ID: id})
		g.unsettled.settle(orig)
	})
}

// onCall serves a call from the peer: it must be for an exported root tag,
// never a privileged one; it is injected into the pump from the gateway's
// name on the conversation derived from its link thread, and acknowledged
// once journaled. A second copy of a call (its conversation already
// received, live or journaled) is acknowledged and dropped. The checks run
// in the link's order; the injection on a handler of its own.
func (g *gateway) onCall(c *conn, e *envelope) {
	nack := func(why string) {
		c.acks.send(frame{Type: frameNack, ID: e.Link.ID, Error: why})
	}
	if isPrivileged(e.PayloadNS, e.PayloadName) {
		c.refusedEnvelope(RefusedPrivileged, "federation: security: privileged root refused", "root", e.PayloadName,
			"ns", e.PayloadNS, "id", e.Link.ID)
		g.m.refusal(g.name, RefusedPrivileged)
		nack("privileged messages never cross a gateway")
		return
	}
	if e.PayloadNS != "" || !g.exported(e.PayloadName) {
		c.refusedEnvelope(RefusedNotExported, "federation: security: call for a root tag not exported refused",
			"root", e.PayloadName, "ns", e.PayloadNS, "id", e.Link.ID)
		g.m.refusal(g.name, RefusedNotExported)
		nack("no such capability")
		return
	}
	if !stage.IsThreadID(e.Thread) {
		g.m.refusal(g.name, RefusedBadThread)
		nack("bad link thread")
		return
	}
	if why, reason := g.tooDeep(e); why != "" {
		c.refusedEnvelope(reason, "federation: call refused: "+why, "id", e.Link.ID, "root", e.PayloadName,
			"hops", e.Link.Hops)
		g.m.refusal(g.name, reason)
		f := frame{Type: frameNack, ID: e.Link.ID, Error: why}
		if reason == RefusedTooDeep {
			f.Reason = ReasonTooDeep
		}
		c.acks.send(f)
		return
	}
	conv := derivedThread(g.m.secret, g.name, e.Thread)
	// A copy of a call being injected is acknowledged with it: the call
	// may yet fail to be journaled (and be nacked, or left to the resend).
	g.mu.Lock()
	o := g.inflight[conv]
	busy, settled := o != nil, o != nil && o.settled
	switch {
	case o == nil:
		o = &original{}
		g.inflight[conv] = o
	case !settled:
		o.addCopy(c, e.Link.ID)
	}
	g.mu.Unlock()
	if busy {
		if settled {
			g.duplicateCall(c, e)
			return
		}
		// A resend by the authenticated peer (see deliver's copies).
		g.log.Info("federation: copy of a call already received refused (being injected; acknowledged with it)",
			"id", e.Link.ID)
		g.m.refusal(g.name, RefusedDuplicate)
		return
	}
	c.handle(func() {
		defer func() {
			g.mu.Lock()
			delete(g.inflight, conv)
			g.mu.Unlock()
		}()
		g.serveCall(c, e, conv, nack, o)
	})
}

// settleCall acknowledges the copies of a call that came while it was
// being injected, now that the call is acknowledged; a copy that comes
// later is acknowledged at once.
func (g *gateway) settleCall(o *original) {
	g.mu.Lock()
	o.settled = true
	copies := o.copies
	o.copies = nil
	g.mu.Unlock()
	for _, k := range copies {
		k.c.acks.send(frame{Type: frameAck, ID: k.id, Duplicate: true})
	}
}

// duplicateCall acknowledges a second copy of a call and drops it: a
// resend by the authenticated peer (a call sent again after a lost
// acknowledgement or a crash), logged at info like any copy.
func (g *gateway) duplicateCall(c *conn, e *envelope) {
	g.log.Info("federation: copy of a call already received refused (its conversation exists; acknowledged again)",
		"id", e.Link.ID)
	g.m.refusal(g.name, RefusedDuplicate)
	c.acks.send(frame{Type: frameAck, ID: e.Link.ID, Duplicate: true})
}

// serveCall injects a call that is not in flight already, unless its
// conversation was received before. Every call sent since the received
// table began has its row there, written before the injection — in the
// same group commit as the call's journal record, or an earlier one — and
// marked done once the journal holds the call: a conversation it lacks is
// new, and the pump need not look its thread up in the journal. The
// journal decides for a call whose row is not done (the organism stopped
// while injecting it) and for one sent before the table existed.
//
// The call is acknowledged once its journal record and its received and
// served rows are durable; where no journal decides (Options.Known nil),
// only once its done mark is durable too.
//
// The copies of the call that came meanwhile (o) are acknowledged with it;
// a call refused (nacked) or left unacknowledged leaves them so too.
func (g *gateway) serveCall(c *conn, e *envelope, conv string, nack func(string), o *original) {
	fresh := false
	state := callUncertain
	// Sent is the peer's clock, which may run ahead by futureSkew.
	if !e.Link.Sent.Before(g.m.db.receivedSince.Add(futureSkew)) {
		// Memory answers for a call sent lately (recent.go), the table
		// for an older one.
		var ok bool
		if state, ok = g.m.db.recent.receivedState(conv, e.Link.Sent, g.m.now()); !ok {
			var err error
			if state, err = g.m.db.received(conv); err != nil {
				g.log.Error("federation: cannot check a received call; not acknowledged", "id", e.Link.ID, "error", err)
				c.acks.forgive(e.Link.ID)
				return // the resend will be processed
			}
		}
	}
	switch state {
	case callDone:
		g.duplicateCall(c, e)
		g.settleCall(o)
		return
	case callUncertain:
		if g.m.known(conv) {
			g.duplicateCall(c, e)
			g.settleCall(o)
			return
		}
	default:
		_, live := g.m.opts.Pump.Threads().Origin(conv)
		fresh = !live
	}
	if target, err := g.refusingCall(e); err != nil { // new here, nothing of it kept yet
		g.refuseBusy(c, e, target, err, true)
		return
	}
	g.m.db.recent.begin(conv, e.Link.Sent)
	begun := g.m.serveBegin(conv, g, e.Thread)
	var begunErr error
	told := false
	select {
	case begunErr = <-begun: // a state in memory writes at once; a closed one refuses at once
		told = true
	default:
	}
	if begunErr != nil {
		g.m.serveEnd(conv, true)
		g.log.Error("federation: call not accepted", "id", e.Link.ID, "error", begunErr)
		nack("Message could not be delivered")
		return
	}
	forget := g.joinTrace(conv, e)
	ctx, cancel := context.WithTimeout(context.Background(), g.callTimeout())
	defer cancel()
	if g.m.beforeInject != nil {
		g.m.beforeInject(conv)
	}
	// No outlet: what the conversation answers reaches the gateway through
	// the manager's subscription (served.go), also after a restart.
	err := g.inject(ctx, pump.Envelope{From: g.name, To: e.To, Thread: conv, Payload: e.Payload,
		As: &pump.Principal{From: g.name, FreshThread: fresh, Profile: g.offer().profile, Hops: e.Link.Hops}})
	if err != nil {
		// A message accepted but not journaled, or whose wait ran out, may
		// be in the pump: its conversation stays received. Any other was
		// refused before it joined a thread: its resend is a new call.
		// A busy refusal kept nothing (the wait for room may have ended
		// by ctx's deadline): refused, with its retry hint.
		_, busy := errors.AsType[*pump.BusyError](err)
		busy = busy || errors.Is(err, pump.ErrCannotJournal) // nothing kept either: the caller may call again
		inPump := !busy && (errors.Is(err, pump.ErrNotDurable) || errors.Is(err, context.DeadlineExceeded) ||
			errors.Is(err, context.Canceled))
		g.m.serveEnd(conv, !inPump)
		if busy {
			forget()
			g.refuseBusy(c, e, "", err, false)
			return
		}
		why := "Message could not be delivered"
		if f, ok := errors.AsType[*failure.Failure](err); ok {
			why = f.Canned()
		}
		c.refusedEnvelope(RefusedUndelivered, "federation: call from the peer not accepted", "id", e.Link.ID, "error", err)
		forget()
		g.m.refusal(g.name, RefusedUndelivered)
		nack(why)
		return
	}
	if !told {
		begunErr = <-begun
	}
	if begunErr != nil {
		// The call is journaled but its rows are not (their write failed
		// alone): write them again, so that a copy is refused and the
		// answer still reaches the peer after a restart.
		if err := g.m.db.write("serve", g.m.db.serveRows(conv, g.name, e.Thread, g.m.now())); err != nil {
			g.log.Error("federation: received call not recorded; a copy after a restart is left to the journal",
				"id", e.Link.ID, "error", err)
		}
	}
	g.mu.Lock()
	cancelled := o.cancelled
	g.mu.Unlock()
	if cancelled {
		// The peer cancelled the call while it was being injected: its
		// cancel found no conversation to kill yet. A cancel that comes
		// from now on finds it live.
		g.killServed(conv)
	}
	id := e.Link.ID
	g.m.db.recent.done(conv)
	if g.m.opts.Known != nil {
		// The journal holds the call: a crash that loses the done mark
		// leaves a row the journal decides for. The mark rides with a
		// coming commit; the acknowledgement waits for none.
		g.m.db.callInjected(conv, func(err error) {
			if err != nil {
				g.log.Warn("federation: received call not marked done", "id", id, "error", err)
			}
		})
		c.acks.send(frame{Type: frameAck, ID: id})
		g.settleCall(o)
		return
	}
	g.m.db.callInjected(conv, func(err error) {
		if err != nil {
			g.log.Warn("federation: received call not recorded", "id", id, "error", err)
		}
		c.acks.send(frame{Type: frameAck, ID: id})
		g.settleCall(o)
	})
}

// inject puts a received call into the pump and returns once its journal
// record is durable. With the store, the wait forces no commit: the
// record commits with the next one somebody waits for — in the common
// case the one the pump forces for the conversation's answer, which is
// then the only commit between the call and its answer — or after the
// store's batch delay. Only the call's acknowledgement waits for it.
func (g *gateway) inject(ctx context.Context, env pump.Envelope) error {
	st := g.m.opts.Store
	if st == nil || g.m.opts.Known == nil {
		_, err := g.m.opts.Pump.SendEnvelope(ctx, env, nil)
		return err
	}
	_, seq, err := g.m.opts.Pump.SendEnvelopeQueued(ctx, env)
	if err != nil || seq <= 0 {
		return err
	}
	if err := st.WaitCommitted(ctx, seq); err != nil {
		return fmt.Errorf("%w: %w", pump.ErrNotDurable, err)
	}
	return nil
}

// onAnswer completes the call a reply, huh or end answers, handing it ack,
// which acknowledges the answer once its seen hash is durable: the call's
// handler runs it once its own output is journaled (proxy). The answer to
// a recorded call nobody waits for now (made before a restart) is kept
// for the re-delivered message that will adopt the call; an answer to a
// call that is neither (answered already, timed out) is dropped. Those
// are acknowledged here, after the answer is kept.
//
// A re-delivered message may take its call back while its answer is being
// kept: its handling registers to be handed the answer (pending) before it
// reads the call's record. Once the answer is kept it is handed over again,
// so that a handling that registered after the first try and read the
// record before the answer was in it is not left waiting until
// call_timeout; one that read it after takes the answer from the record
// and is no longer registered, and the answer is acknowledged here.
func (g *gateway) onAnswer(e *envelope, raw []byte, ack func()) {
	if g.handTo(e.Link.Ref, answered{e: e, ack: ack}) {
		return
	}
	if g.m.proxyHook != nil {
		g.m.proxyHook(answerUnclaimed, e.Link.Ref)
	}
	kept, err := g.m.db.keepAnswer(g.name, e.Link.Ref, raw)
	switch {
	case err != nil:
		g.log.Error("federation: answer not kept", "call", e.Link.Ref, "error", err)
	case kept:
		if g.m.proxyHook != nil {
			g.m.proxyHook(answerKept, e.Link.Ref)
		}
		if g.handTo(e.Link.Ref, answered{e: e, ack: ack}) {
			g.log.Info("federation: answer handed to the re-delivered message that took its call back",
				"call", e.Link.Ref, "kind", e.Link.Kind)
			return
		}
		g.log.Info("federation: answer kept for a call made before a restart", "call", e.Link.Ref, "kind", e.Link.Kind)
	case g.m.now().Sub(g.m.began) < 2*g.callTimeout() && stage.IsThreadID(e.Link.Ref):
		if g.keepOrphan(e, raw, ack) {
			return
		}
	default:
		g.log.Info("federation: answer to a call nobody waits for dropped", "call", e.Link.Ref, "kind", e.Link.Kind)
	}
	ack()
}

// handTo hands a to the call waiting under ref, if one does, or parks it
// for the call a halt held open (handHeld), and reports whether it did.
// It hands it under g.mu, so that a handler that stopped waiting finds it
// once it removed its call from pending (holdCall).
func (g *gateway) handTo(ref string, a answered) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.pending[ref]
	if c == nil {
		return g.handHeld(ref, a)
	}
	delete(g.pending, ref)
	select {
	case c.answer <- a:
		return true
	default: // it holds an answer already
		return false
	}
}

// keepOrphan keeps an answer to a call with no record, soon after a start:
// the call may have left before a crash lost its record (openByID), and the
// message that made it, re-delivered, makes it again — after this answer
// (it finds it kept) or before (it waits, and is handed the answer here).
// The answer is durable before it is acknowledged (its seen hash is queued
// after it). It reports whether a call was handed the answer, with ack.
func (g *gateway) keepOrphan(e *envelope, raw []byte, ack func()) bool {
	// Before the answer commits: a handling that makes the call from now
	// on looks for it (and if it looks too early, is handed it below).
	g.adoptable.Store(true)
	if err := g.m.db.keepOrphan(g.name, e.Link.Ref, raw, g.m.now()); err != nil {
		g.log.Error("federation: answer not kept", "call", e.Link.Ref, "error", err)
		return false
	}
	if g.handTo(e.Link.Ref, answered{e: e, ack: ack}) {
		return true
	}
	g.log.Info("federation: answer to a call with no record kept for a while", "call", e.Link.Ref, "kind", e.Link.Kind)
	return false
}

// onCancel ends the conversation begun for a call whose caller's thread
// ended.
func (g *gateway) onCancel(e *envelope) {
	if !stage.IsThreadID(e.Link.Ref) {
		return
	}
	conv := derivedThread(g.m.secret, g.name, e.Link.Ref)
	g.mu.Lock()
	if o := g.inflight[conv]; o != nil {
		// Still being injected (serveCall): it kills the conversation
		// once it is in the pump, which may be before this kill.
		o.cancelled = true
	}
	g.mu.Unlock()
	if !g.m.serving(conv) {
		return // answered and ended already, or never begun
	}
	g.killServed(conv)
}

// killServed kills the conversation conv serving a call the peer
// cancelled; one not in the pump (yet, or any more) is left alone.
func (g *gateway) killServed(conv string) {
	if _, err := g.m.opts.Pump.Kill(conv); err != nil && !errors.Is(err, pump.ErrUnknownThread) &&
		!errors.Is(err, pump.ErrConversationEnded) {
		g.log.Warn("federation: cancel", "thread", conv, "error", err)
	}
}

// refused fails the open call a nack refused, or the call held open for
// the next handling of its message (holdCall); reason is the nack's (a
// refusal for the hop limit fails it with a pump.TooDeepError).
func (g *gateway) refused(id, why, reason string) {
	err := fmt.Errorf("%w: gateway %s: %s", ErrRefused, g.name, why)
	if reason == ReasonTooDeep {
		err = fmt.Errorf("%w: gateway %s: %w", ErrRefused, g.name, &pump.TooDeepError{Why: why})
	}
	g.refusedWith(id, err)
}

// refusedWith is refused with the call's error err.
func (g *gateway) refusedWith(id string, err error) {
	g.mu.Lock()
	c := g.pending[id]
	delete(g.pending, id)
	if c == nil {
		g.refuseHeld(id, err)
	}
	g.mu.Unlock()
	if c != nil {
		c.refused <- err
	}
}
