package federation

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strconv"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// call is a call this side made and waits on.
type call struct {
	thread  string // the caller's thread
	answer  chan answered
	refused chan error
	// cancelled is closed when the caller's thread ends first.
	cancelled chan struct{}
}

// answered is an answer handed to the call waiting for it, with what
// acknowledges it to the peer: the handler that takes it acknowledges it
// once its own output is journaled (see proxy).
type answered struct {
	e   *envelope
	ack func()
}

// proxy is the handler of an imported capability: it sends the payload to
// the peer's capability name on a fresh link thread and waits (bounded by
// call_timeout, outages included) for the answer, which it returns to the
// caller. It waits detached from the import's worker (pump.Detach), which
// opens the next call meanwhile. A caller that takes text (an LLM agent) gets the answer's XML as
// text. The call is recorded with its envelope, so the same message handled
// again after a crash adopts it rather than calling twice.
//
// The answer is acknowledged to the peer, and the call's record (which may
// hold it) forgotten, only once the pump journaled the handler's output
// that carries it (pump.AfterJournal): before, a crash could lose that
// output after the peer deleted the answer, and the re-delivered message,
// calling again under the same id, would be refused as a copy and never
// answered. Both are queued after the output on the store, so they commit
// with it or later; a handling whose output is not journaled (a shutdown)
// leaves the answer unacknowledged, and the peer sends it again.
//
// A halt that stops the handling of a call named by its message once its
// answer came — the handler took it, and the pump drops what it returns
// (pump.AfterJournalOr), or it was handed over as the halt cancelled the
// wait — parks the answer (park.go): the handling after Unhalt names the
// call the same, takes the answer (openByID) and returns it without calling
// the peer again. A halt that stops the wait before the answer came holds
// the call open (holdCall): the peer's answer is parked when it comes, and
// the next handling takes it, or waits on the same call if it comes later.
func (g *gateway) proxy(remote string, pt *xmlpipe.PayloadType) xmlpipe.Handler {
	return xmlpipe.HandlerFunc(func(ctx context.Context, payload any, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		body, err := pt.AppendPayload(nil, payload)
		if err != nil {
			return nil, fmt.Errorf("federation: gateway %s: %w", g.name, err)
		}
		// Opening a call and removing the gateway exclude each other: a
		// call opened once the removal began is refused before it is
		// queued, and one opened before counts as waiting from the
		// start, so the removal waits for it to be cancelled and the
		// peer to acknowledge that (endCalls) — none is left in the
		// outbox of a gateway that is gone.
		g.mu.Lock()
		select {
		case <-g.removing:
			g.mu.Unlock()
			return nil, fmt.Errorf("%w: gateway %s: %s: the call was not made", ErrGatewayRemoved, g.name, remote)
		default:
		}
		g.waiting++
		g.mu.Unlock()
		defer func() {
			g.mu.Lock()
			g.waiting--
			g.mu.Unlock()
			g.kickWaiters()
		}()
		c := &call{thread: md.ThreadID, answer: make(chan answered, 1), refused: make(chan error, 1),
			cancelled: make(chan struct{})}
		o, err := g.open(ctx, c, md.ThreadID, remote, body, traceparent(ctx))
		if err != nil {
			return nil, err
		}
		lt, early := o.lt, o.early
		g.reach.callQueued()
		if g.m.proxyHook != nil {
			g.m.proxyHook(proxyOpened, lt)
		}
		keep := false // a call left open at shutdown is adopted after the restart
		// parked is set once the call whose wait a halt stopped is kept
		// for the next handling — with the answer handed over meanwhile
		// (park: or dropped), or held open for it (holdCall).
		parked := false
		// held is set once the call is held open (holdCall): its thread
		// keeps naming it (byThread), so that a kill cancels it.
		held := false
		// got is set when the handler returns the answer (ans): its ack
		// (none for an answer acknowledged when it was kept) and the
		// record's deletion wait for the handler's output.
		got, ans, ack := early != nil, early, o.ack
		if ack == nil {
			ack = func() {}
		}
		defer func() {
			g.mu.Lock()
			if g.pending[lt] == c {
				delete(g.pending, lt)
			}
			if g.byThread[md.ThreadID] == lt && !held {
				delete(g.byThread, md.ThreadID)
			}
			g.mu.Unlock()
			if parked {
				return
			}
			select {
			case a := <-c.answer:
				// Handed over as the handler stopped waiting: dropped as
				// the call is, unless it stays open for the restart,
				// whose adoption the peer's resend answers.
				if !keep {
					a.ack()
				}
			default:
			}
			if keep {
				return
			}
			if got {
				g.m.afterJournal(ctx, func() {
					ack()
					g.forgetCall(o)
				}, func() { g.park(ctx, o, md.ThreadID, ans, ack) })
				return
			}
			g.forgetCall(o)
		}()
		start := time.Now()
		if early != nil {
			return g.answer(md, early)
		}
		// The call left (or waits in the outbox): what remains is waiting
		// for the peer, which holds no worker of the import — the next
		// call is opened at once, however many wait.
		pump.Detach(ctx)
		// A link silent while the call waits is probed: a frozen peer is
		// told in seconds, not at the keepalive's limit (keepalive).
		g.probeSoon()
		timeout := g.callTimeout()
		t := time.NewTimer(timeout)
		defer t.Stop()
		// Every noticeAfter the caller is told, once, if the peer cannot
		// be reached (tellWaiting).
		tell := time.NewTicker(noticeAfter)
		defer tell.Stop()
		for {
			select {
			case <-tell.C:
				if g.tellWaiting(md, remote, timeout) {
					tell.Stop()
				}
				continue
			case a := <-c.answer:
				g.m.observe(g.name, time.Since(start))
				got, ans, ack = true, a.e, a.ack
				if g.m.proxyHook != nil {
					g.m.proxyHook(proxyTookAnswer, lt)
				}
				return g.answer(md, a.e)
			case err := <-c.refused:
				return nil, err
			case <-c.cancelled:
				return nil, nil
			case <-t.C:
				g.cancel(lt)
				return nil, g.timedOut(md, remote, timeout)
			case <-ctx.Done():
				if g.m.proxyHook != nil {
					g.m.proxyHook(proxyStopping, lt)
				}
				if (o.key != "" || o.digest != nil) && rerun(ctx) {
					var a answered
					var came bool
					a, came, held = g.holdCall(o, c, md.ThreadID)
					switch {
					case came:
						parked = true
						g.park(ctx, o, md.ThreadID, a.e, a.ack)
						return nil, ctx.Err()
					case held:
						parked = true
						return nil, ctx.Err()
					}
				}
				g.cancel(lt)
				g.retry(o)
				return nil, ctx.Err()
			case <-g.m.closed:
				keep = true
				return nil, g.stopErr(remote, o.key != "")
			case <-g.removing:
				g.cancel(lt)
				return nil, fmt.Errorf("%w: gateway %s: %s: the call was cancelled", ErrGatewayRemoved, g.name, remote)
			}
		}
	})
}

// stopErr is the error of a call whose wait the stop ended (Manager.Stop
// ends them, so that a silent peer cannot hold the drain); its record
// stays for the next start. It wraps ErrClosed and pump.ErrStopping: the
// pump leaves a journaled message (journaled: the call is named by it)
// undelivered, and at the next start the re-delivered message adopts the
// call — the peer's answer, which the peer resends, answers it once. A
// message not journaled is not re-delivered: its sender is told the stop
// ended the call.
func (g *gateway) stopErr(remote string, journaled bool) error {
	then := "its message is re-delivered at the next start and takes the peer's answer"
	if !journaled {
		then = "its message is not journaled (no data directory), so nothing takes the call up again"
	}
	return &stoppedError{msg: fmt.Sprintf("federation: gateway %s: %s: the organism stopped while the call waited on the peer; %s",
		g.name, remote, then)}
}

// stoppedError is a call ended by the stop (gateway.stopErr).
type stoppedError struct{ msg string }

// Error says which call the stop ended and what becomes of it.
func (e *stoppedError) Error() string { return e.msg }

// Unwrap makes it ErrClosed and pump.ErrStopping.
func (e *stoppedError) Unwrap() []error { return []error{ErrClosed, pump.ErrStopping} }

// proxyStep names a moment of a proxy handling, or of the receipt of an
// answer (onAnswer), a test may hold it at (Manager.proxyHook).
type proxyStep int

const (
	// proxyTookAnswer: the handler took the answer it returns.
	proxyTookAnswer proxyStep = iota + 1
	// proxyStopping: the handler's context ended while it waited.
	proxyStopping
	// proxyOpened: the handler opened its call (queued it for the peer).
	proxyOpened
	// proxyAdopting: the handler read the recorded calls it may adopt
	// (adopt), and is about to claim one.
	proxyAdopting
	// answerUnclaimed: onAnswer found no call waiting for the answer, and
	// is about to keep it.
	answerUnclaimed
	// answerKept: onAnswer kept the answer for a recorded call, and is
	// about to hand it over again.
	answerKept
)

// forgetCall forgets call o once its handler is done with it.
func (g *gateway) forgetCall(o opened) {
	lt := o.lt
	// A record not written yet never will be: as if it and its deletion
	// committed together. The deletion still runs for an answer kept
	// meanwhile (keepOrphan), unless none can be: the gateway marks itself
	// adoptable before it keeps one, so while it is not, no row of this
	// call exists or is queued (an answer kept after this point is queued
	// after the deletion, which would not remove it either). Skipping it
	// spares the caller's commit of the answer a statement.
	cancelled := o.rec != nil && o.rec.row.cancel()
	if cancelled {
		g.m.db.settleDeferred(o.rec.deferred)
	}
	if cancelled && !g.adoptable.Load() {
		g.mu.Lock()
		delete(g.claimed, lt)
		g.mu.Unlock()
		return
	}
	// The call stays claimed until its record is gone, so that the same
	// call made again meanwhile is a new one, not an adoption.
	g.m.db.callDone(lt, func(err error) {
		if err != nil {
			g.log.Warn("federation: call record", "error", err)
		}
		g.mu.Lock()
		delete(g.claimed, lt)
		g.mu.Unlock()
	})
}

// answer turns the peer's answer into the handler's response.
func (g *gateway) answer(md xmlpipe.Metadata, a *envelope) (xmlpipe.Response, error) {
	switch a.Link.Kind {
	case KindEnd:
		return nil, nil
	case KindHuh:
		if a.Link.Reason == ReasonTooDeep {
			return nil, fmt.Errorf("%w: gateway %s: %w", ErrRefused, g.name, &pump.TooDeepError{Why: a.Link.Error})
		}
		return nil, fmt.Errorf("%w: gateway %s: the peer answered: %s", ErrRefused, g.name, a.Link.Error)
	}
	// An agent caller gets the answer as it gets a local tool's: the pump
	// turns it into the agent's text (its JSON form), keeping the XML for
	// the constitution's rules.
	v, err := replyValue(a.Payload)
	if err != nil {
		return nil, fmt.Errorf("federation: gateway %s: the peer's answer <%s>: %w", g.name, a.PayloadName, err)
	}
	return xmlpipe.Respond(v), nil
}

// cancel tells the peer the caller no longer waits for call lt. A call
// that never left (the link was down all along) is withdrawn from the
// outbox instead: it neither holds a place under queue_limit nor reaches
// the peer after the reconnect, to be run for nobody.
func (g *gateway) cancel(lt string) {
	if g.withdraw(lt) {
		return
	}
	if err := g.send(&envelope{Thread: lt, Link: link{Kind: KindCancel, Ref: lt}}, nil); err != nil {
		g.log.Warn("federation: cancel not sent", "call", lt, "error", err)
	}
}

// threadsEnded cancels the open calls of callers whose thread ended and
// drops the answers parked for them (endParked).
func (g *gateway) threadsEnded(ids []string) {
	var ended []*call
	var lts []string
	g.mu.Lock()
	for _, id := range ids {
		lt, ok := g.byThread[id]
		if !ok {
			continue
		}
		delete(g.byThread, id)
		if c := g.pending[lt]; c != nil {
			delete(g.pending, lt)
			ended = append(ended, c)
			lts = append(lts, lt)
		}
	}
	g.mu.Unlock()
	for i, c := range ended {
		close(c.cancelled)
		g.cancel(lts[i])
	}
	g.endParked(ids)
}

// opened is a call a handler waits on: its link thread, the answer that
// came before it was adopted (with what acknowledges it: nil for one
// acknowledged when it was kept), and for a call named by its message
// (openByID) the key and attempt it was named with.
type opened struct {
	lt    string
	early *envelope
	ack   func()
	key   string
	n     int
	// rec is the record of a call named by its message (openByID).
	rec *callRecord
	// digest is what a call with a random link thread is recognised by
	// (openByDigest).
	digest []byte
}

// open starts the call of payload body from callerThread. When the
// message being handled is journaled (pump.MessageSeq, in an organism
// with a store) the call is named by it (openByID); otherwise it is
// recorded durably before it leaves and found again by its digest
// (openByDigest).
func (g *gateway) open(ctx context.Context, c *call, callerThread, remote string, body []byte, tp string) (opened, error) {
	if seq, recovered := g.m.handling(ctx); seq > 0 {
		return g.openByID(ctx, c, seq, recovered, callerThread, remote, body, tp)
	}
	return g.openByDigest(c, callerThread, remote, body, tp)
}

// callDigest is what a call is recognised by when adopted by its digest.
func callDigest(callerThread, remote string, body []byte) []byte {
	h := sha256.New()
	h.Write([]byte(callerThread))
	h.Write([]byte{0})
	h.Write([]byte(remote))
	h.Write([]byte{0})
	h.Write(body)
	return h.Sum(nil)
}

// callKey names the calls of the handling of message seq to remote.
func callKey(remote string, seq int64) string {
	return remote + "\x00" + strconv.FormatInt(seq, 10)
}

// openByID starts the call that the handling of journaled message seq makes
// — or, when a call of that name was recorded before this start (the
// message is re-delivered after a restart), adopts it, returning its
// answer if it came meanwhile.
//
// The call's id derives from the message (callID), so it needs no record
// to be recognised: it leaves as soon as its message is durable (usually at
// once: the pump commits what it journals without delay), and its record
// and outbox entry ride the next commit. A crash before that commit loses
// them, but not the call: the re-delivered message makes it again under the
// same id, which the peer refuses as a copy if it had it and answers under
// (its answer, if it came first, was kept by onAnswer). The message itself
// must be durable before its call leaves, or a crash could lose it and run
// the handler that sent it again (a second call the peer cannot tell from a
// new one).
//
// A handling that a halt stopped once its answer came left the answer
// parked under the call's id (park.go): the handling after Unhalt, which
// computes that id again, takes it as the answer that came before it,
// without calling the peer; its own output acknowledges the answer. One
// that a halt stopped before the answer came left the call held open
// (holdCall): the next handling waits on it, handed a refusal that came
// meanwhile. A handling that ended otherwise before its answer came (the
// bound of held calls reached) made the next one call anew (retry), under
// the next id.
func (g *gateway) openByID(ctx context.Context, c *call, seq int64, recovered bool, callerThread, remote string,
	body []byte, tp string) (opened, error) {
	key := callKey(remote, seq)
	g.mu.Lock()
	n := g.retried[key]
	lt := callID(g.m.secret, g.m.db.epoch, g.name, remote, seq, n)
	for {
		if p := g.takeParked(lt); p != nil { // a halt stopped the handling that made the call
			return g.resume(p, c, callerThread), nil
		}
		if !g.claimed[lt] && g.pending[lt] == nil {
			break
		}
		n++ // the same handling running twice at once
		lt = callID(g.m.secret, g.m.db.epoch, g.name, remote, seq, n)
	}
	g.claimed[lt] = true
	g.pending[lt] = c
	g.byThread[callerThread] = lt
	g.mu.Unlock()
	o := opened{lt: lt, key: key, n: n}
	release := func() { g.unclaim(lt, callerThread) }
	fail := func(err error) (opened, error) {
		release()
		return opened{}, err
	}
	if g.adoptable.Load() { // recorded before this start, or answered with no record
		found, answer, err := g.m.db.callByID(g.name, lt)
		if err != nil {
			return fail(err)
		}
		if found {
			g.log.Info("federation: a re-delivered message adopts its call from before the restart", "call", lt)
			if answer != nil {
				g.mu.Lock()
				mine := g.pending[lt] == c // else onAnswer handed it to c meanwhile
				if mine {
					delete(g.pending, lt)
				}
				g.mu.Unlock()
				if mine {
					a, err := parse(answer)
					if err != nil {
						return fail(err)
					}
					o.early = a
				}
			}
			return o, nil
		}
		if recovered {
			// A call an earlier version recorded by its digest.
			ids, answers, err := g.m.db.openCalls(g.name, callerThread, callDigest(callerThread, remote, body))
			if err != nil {
				return fail(err)
			}
			if len(ids) > 0 {
				release()
				if a, ok, err := g.adopt(c, callerThread, nil, ids, answers); err != nil || ok {
					return a, err
				}
				return g.openByID(ctx, c, seq, false, callerThread, remote, body, tp)
			}
		}
	}
	sent := g.m.now()
	if recovered {
		// It may have left before the crash: it carries the time its
		// message was journaled, so that the peer refuses it as stale
		// once it may have forgotten the first copy (retention).
		if at, ok := g.m.journaledAt(seq); ok {
			sent = at
		}
	}
	// The message's commit is asked for first and runs while the call is
	// signed: it is sent only once the message is durable.
	durable := make(chan error, 1)
	go func() { durable <- g.m.opts.Store.WaitDurable(ctx, seq) }()
	e := &envelope{To: remote, Thread: lt, Link: link{ID: lt, Kind: KindCall, Traceparent: tp, Sent: sent,
		Hops: g.hopsOf(callerThread)}, Payload: body}
	signed, err := g.sign(e)
	if derr := <-durable; derr != nil {
		return fail(fmt.Errorf("federation: gateway %s: the message calling %s is not durable: %w", g.name, remote, derr))
	}
	if err != nil {
		return fail(err)
	}
	rec := &callRecord{callerThread: callerThread, byID: true}
	if err := g.queue(e, signed, rec); err != nil {
		return fail(err)
	}
	o.rec = rec
	return o, nil
}

// retry makes the next handling of o's message in this life call anew
// (its handling ended before the call did, or dropped its answer; a halt
// runs it again): the peer would refuse a second call under o's id as a
// copy.
func (g *gateway) retry(o opened) {
	if o.key == "" {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.retried) >= maxRetried {
		clear(g.retried) // an interrupted handling not run again for long: forget it
	}
	g.retried[o.key] = o.n + 1
}

// maxRetried bounds gateway.retried.
const maxRetried = 4096

// openByDigest starts the call of payload body from callerThread — or, when
// a call of the same payload from the same thread was recorded and nobody
// waits on it (the message is re-delivered after a restart), adopts that
// call instead of calling again, returning its answer if it came
// meanwhile. The call leaves once it and its record are durable. A call of
// the same payload from the same thread whose handling a halt stopped
// (holdCall, park) is taken first, as openByID takes it by its id — while
// its handler had not taken the answer: an organism without a journal
// acknowledges an answer as its handler takes it, and a halt after that
// makes the call again.
func (g *gateway) openByDigest(c *call, callerThread, remote string, body []byte, tp string) (opened, error) {
	digest := callDigest(callerThread, remote, body)
	g.mu.Lock()
	if p := g.takeParkedByDigest(callerThread, digest); p != nil { // a halt stopped the handling that made it
		return g.resume(p, c, callerThread), nil
	}
	g.mu.Unlock()
	if g.adoptable.Load() { // calls recorded before this start may wait for adoption
		ids, answers, err := g.m.db.openCalls(g.name, callerThread, digest)
		if err != nil {
			return opened{}, err
		}
		if o, ok, err := g.adopt(c, callerThread, digest, ids, answers); err != nil || ok {
			return o, err
		}
	}
	lt := stage.NewThreadID()
	g.mu.Lock()
	g.pending[lt] = c
	g.claimed[lt] = true
	g.byThread[callerThread] = lt
	g.mu.Unlock()
	e := &envelope{To: remote, Thread: lt, Link: link{ID: lt, Kind: KindCall, Traceparent: tp, Hops: g.hopsOf(callerThread)},
		Payload: body}
	if err := g.send(e, &callRecord{callerThread: callerThread, digest: digest}); err != nil {
		g.mu.Lock()
		delete(g.pending, lt)
		delete(g.claimed, lt)
		g.mu.Unlock()
		return opened{}, err
	}
	return opened{lt: lt, digest: digest}, nil
}

// adopt claims the first of the recorded calls ids (answers: what each
// has) that nobody waits on, for c; ok says one was.
//
// The answers were read before c was registered (pending): an answer kept
// since then was handed to no one (onAnswer hands it only to a call
// registered by the time it is kept), so the record is read again once c
// is. An answer found there is taken unless onAnswer handed it to c
// meanwhile.
func (g *gateway) adopt(c *call, callerThread string, digest []byte, ids []string, answers [][]byte) (o opened, ok bool, err error) {
	if g.m.proxyHook != nil && len(ids) > 0 {
		g.m.proxyHook(proxyAdopting, ids[0])
	}
	g.mu.Lock()
	for i, id := range ids {
		if g.pending[id] != nil || g.claimed[id] {
			continue
		}
		g.claimed[id] = true
		g.pending[id] = c
		g.byThread[callerThread] = id
		g.mu.Unlock()
		g.log.Info("federation: a re-delivered message adopts its call from before the restart", "call", id)
		answer := answers[i]
		if answer == nil {
			if _, answer, err = g.m.db.callByID(g.name, id); err != nil {
				g.unclaim(id, callerThread)
				return opened{}, true, err
			}
		}
		if answer != nil {
			g.mu.Lock()
			mine := g.pending[id] == c // else onAnswer handed it to c meanwhile
			if mine {
				delete(g.pending, id)
			}
			g.mu.Unlock()
			if mine {
				a, err := parse(answer)
				if err != nil { // no answer to wait for: the call is not this handling's
					g.unclaim(id, callerThread)
					return opened{}, true, fmt.Errorf("federation: gateway %s: the kept answer of call %s: %w", g.name, id, err)
				}
				return opened{lt: id, early: a, digest: digest}, true, nil
			}
		}
		return opened{lt: id, digest: digest}, true, nil
	}
	g.mu.Unlock()
	return opened{}, false, nil
}

// unclaim undoes a handling's claim of call lt for callerThread: it no
// longer waits for its answer, and the call may be made again.
func (g *gateway) unclaim(lt, callerThread string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.pending, lt)
	delete(g.claimed, lt)
	if g.byThread[callerThread] == lt {
		delete(g.byThread, callerThread)
	}
}
