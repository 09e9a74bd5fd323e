package federation

import (
	"crypto/ed25519"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"

	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/federation/envsig"
	"github.com/xml-pipeline/xmlpipe/schemas"
)

// gateway is one gateways[] entry at run time: its link (when up), its
// outbox, the calls it has open with the peer and the conversations it
// serves for the peer.
type gateway struct {
	m    *Manager
	name string
	// cfg is the gateway's configuration as it started; target is where
	// its peer is and which key it trusts now (a reload may relink them).
	cfg    config.Gateway
	target atomic.Pointer[linkTarget]
	// face is what it offers and takes (a reload may reface it); cfg's
	// description, import, export and profile are those it started with.
	face atomic.Pointer[face]
	// limits bound what waits for the peer (a reload may retune them).
	limits atomic.Pointer[limits]
	log    *slog.Logger

	// down says why the link is down, and since when (Status).
	down linkDown
	// reach follows an outage of a dialed peer for the log (outage).
	reach outage
	// envIn and envOut count the envelopes seen each way (Status).
	envIn, envOut atomic.Int64

	// imu serializes the changes of the imported listeners: a refresh
	// (refreshImports) registers those it learnt in full — in the pump
	// and in registered — before a reload (reface) reads which to take
	// out, and reads the imports a reload left.
	imu sync.Mutex

	mu   sync.Mutex
	conn *conn
	gen  int
	// prepared is the link made at start to fetch the imports
	// (refreshOnce), until the dialer loop adopts it.
	prepared *conn
	// outbox mirrors the database's outbox of this gateway, in order.
	outbox []*entry
	byID   map[string]*entry
	// reserving counts the envelopes being committed to the outbox (they
	// count against queue_limit already), and reservingBytes their signed
	// bytes (against queue_bytes); outboxBytes are the signed bytes of
	// outbox.
	reserving                   int
	reservingBytes, outboxBytes int
	// pending are the calls this side made, by link thread; byThread maps
	// the caller's thread to its open call.
	pending  map[string]*call
	byThread map[string]string
	// inflight are derived conversation ids being injected, with the
	// copies of their calls that came meanwhile (acknowledged with the
	// call: unsettled.go).
	inflight map[string]*original
	// questions are the meta questions waiting for the peer's answer.
	questions map[string]chan *envelope
	// claimed are the recorded calls a handler of this process made or
	// adopted (so a second identical call is a new one, not an adoption).
	claimed map[string]bool
	// adoptable says the gateway had recorded calls when it was loaded,
	// or keeps an answer to a call nobody made in this life (onAnswer):
	// only then can a call be adopted (every call made since is claimed
	// until its record is gone).
	adoptable atomic.Bool
	// retried counts, by message and capability (callKey), the handlings
	// in this life that ended before their call did and cancelled it
	// (ctx cancelled, the call not held open: holdCall), so that the next
	// one calls anew.
	retried map[string]int
	// parked are the calls named by their message whose handling a halt
	// stopped, with their answer once it came, by link thread, for the
	// next handling of the message (park.go).
	parked map[string]*parkedAnswer
	// unsettled are the received envelopes not acknowledged yet, with the
	// copies that wait for them.
	unsettled unsettled
	// registered are the imported listeners added to the pump, by name,
	// with the capability each stands for.
	registered map[string]imported
	// stopped is closed when the gateway is removed (RemoveGateway).
	stopped  chan struct{}
	stopOnce sync.Once
	kick     chan struct{}
	// refreshing is set while refreshSoon asks the peer for the imports;
	// again, when the peer said its exports changed meanwhile.
	refreshing, again atomic.Bool
	// redial is kicked (never blocking) when a reload relinks the gateway
	// elsewhere: the dialer dials at once instead of backing off.
	redial chan struct{}
	// ackKick is kicked (never blocking) whenever the peer acknowledges
	// or refuses an outbox entry (awaitAcks), or a handler stops waiting
	// on a call (awaitWaiting).
	ackKick chan struct{}
	// removing is closed when RemoveGateway begins: the calls waiting on
	// the peer fail with ErrGatewayRemoved and cancel their call, while
	// the link still runs. waiting counts the handlers waiting on a call
	// (under mu).
	removing   chan struct{}
	removeOnce sync.Once
	waiting    int
}

// entry is an outbox envelope; sentOn is the link generation it was last
// written on: 0 never (in this life), mayHaveLeft one loaded at start (it
// may have been written before the restart).
type entry struct {
	seq    int64
	id     string
	env    []byte
	sentOn int
	// row says whether its outbox row was written or its insert
	// cancelled by an early acknowledgement; deferred is the write that
	// will insert it, while it waits (a call's: deferred.go).
	row      rowClaim
	deferred *deferredWrite
}

func newGateway(m *Manager, gc config.Gateway, trusted ed25519.PublicKey) *gateway {
	g := &gateway{m: m, name: gc.Name, cfg: gc, log: m.log.With("gateway", gc.Name),
		byID: map[string]*entry{}, pending: map[string]*call{}, byThread: map[string]string{},
		inflight: map[string]*original{}, questions: map[string]chan *envelope{},
		registered: map[string]imported{}, claimed: map[string]bool{}, retried: map[string]int{},
		parked: map[string]*parkedAnswer{}, stopped: make(chan struct{}), kick: make(chan struct{}, 1), redial: make(chan struct{}, 1),
		ackKick: make(chan struct{}, 1), removing: make(chan struct{})}
	g.face.Store(faceOf(gc))
	g.down.begin(m.now())
	g.limits.Store(limitsOf(gc))
	g.target.Store(&linkTarget{url: gc.RemoteURL, trusted: trusted, identity: gc.TrustedIdentity,
		registered: len(gc.TrustedKey) > 0})
	return g
}

// load fills the in-memory outbox from the database (after a restart).
func (g *gateway) load() error {
	list, err := g.m.db.pending(g.name)
	if err != nil {
		return err
	}
	adoptable, err := g.m.db.hasCalls(g.name)
	if err != nil {
		return err
	}
	g.adoptable.Store(adoptable)
	for _, q := range list {
		e := &entry{seq: q.seq, id: q.id, env: q.env, sentOn: mayHaveLeft}
		e.row.written()
		g.outbox = append(g.outbox, e)
		g.outboxBytes += len(e.env)
		g.byID[q.id] = e
	}
	if len(list) > 0 {
		g.log.Info("federation: messages waiting for the peer", "queued", len(list))
	}
	return nil
}

// send signs e and queues it for the peer, with rec when e is a call, then
// wakes the sender: a call adopted by its digest once it and its record
// are durable, anything else at once (sendEarly).
func (g *gateway) send(e *envelope, rec *callRecord) error {
	signed, err := g.sign(e)
	if err != nil {
		return err
	}
	return g.queue(e, signed, rec)
}

// sign fills in what e lacks (its id, when it is sent, its sender) and
// signs it.
func (g *gateway) sign(e *envelope) ([]byte, error) {
	if e.Link.ID == "" {
		e.Link.ID = uuid.NewString()
	}
	if e.Link.Sent.IsZero() {
		e.Link.Sent = g.m.now()
	}
	if e.From == "" {
		e.From = g.m.opts.Organism
	}
	signed, err := envsig.Sign(g.m.opts.Key, e.build())
	if err != nil {
		return nil, fmt.Errorf("federation: gateway %s: sign: %w", g.name, err)
	}
	return signed, nil
}

// queue queues e, signed, for the peer (see send). One larger than a link
// frame may be is refused with ErrTooLarge: the peer would close the link
// on it, again after every reconnect, holding up all that follows it.
func (g *gateway) queue(e *envelope, signed []byte, rec *callRecord) error {
	if err := fitsFrame(g.name, e, signed); err != nil {
		return err
	}
	g.mu.Lock()
	lim := g.limits.Load()
	if n := len(g.outbox) + g.reserving; n >= lim.queueLimit {
		g.mu.Unlock()
		return fmt.Errorf("%w: gateway %s holds %d messages for the peer (queue_limit %d); the link is down or the peer slow",
			ErrQueueFull, g.name, n, lim.queueLimit)
	}
	if b := g.outboxBytes + g.reservingBytes; b > 0 && b+len(signed) > lim.queueBytes {
		// The first one always fits (one envelope is at most a frame):
		// queue_bytes below a frame never blocks every call.
		g.mu.Unlock()
		return fmt.Errorf("%w: gateway %s holds %d bytes for the peer, %d more would pass queue_bytes %d; the link is "+
			"down or the peer slow", ErrQueueFull, g.name, b, len(signed), lim.queueBytes)
	}
	if rec == nil || rec.byID {
		return g.sendEarly(e, signed, rec, "") // releases g.mu
	}
	g.reserving++
	g.reservingBytes += len(signed)
	g.mu.Unlock()
	// Not under g.mu: concurrent senders share the group commit.
	seq, err := g.m.db.enqueue(g.name, e.Link.ID, signed, e.Link.Sent, rec)
	g.mu.Lock()
	g.reserving--
	g.reservingBytes -= len(signed)
	if err != nil {
		g.mu.Unlock()
		return err
	}
	// Envelopes committed together return in any order: keep the
	// outbox in the order of the database's (the order they are sent).
	en := &entry{seq: seq, id: e.Link.ID, env: signed}
	en.row.written()
	g.insert(en)
	g.mu.Unlock()
	g.envelopeSeen(DirectionOut, e.Link.Kind)
	g.wake()
	return nil
}

// sendAnswer signs e, the answer (reply, huh or end) of served
// conversation conv, and queues it for the peer as sendEarly does, with
// the deletion of conv's served row in the same transaction. queue_limit
// does not apply: it bounds what this side starts, and the answer is to a
// call already accepted (and journaled) here; refused, it would be lost,
// and the peer's caller would wait for it until its call_timeout.
//
// An answer larger than a link frame may be is replaced by a huh saying so:
// the peer's caller fails at once instead of waiting.
func (g *gateway) sendAnswer(e *envelope, conv string) error {
	signed, err := g.sign(e)
	if err != nil {
		return err
	}
	if err := fitsFrame(g.name, e, signed); err != nil {
		g.log.Warn("federation: answer too large for the link; the peer is told so", "error", err)
		e = &envelope{Thread: e.Thread, Link: link{Kind: KindHuh, Ref: e.Link.Ref,
			Error: fmt.Sprintf("the answer is %d bytes signed, larger than a federation link carries (%d)", len(signed), maxFrame)}}
		if signed, err = g.sign(e); err != nil {
			return err
		}
	}
	g.mu.Lock()
	return g.sendEarly(e, signed, nil, conv) // releases g.mu
}

// fitsFrame refuses with ErrTooLarge e, signed, when it is larger than a
// link frame may be (maxFrame).
func fitsFrame(gw string, e *envelope, signed []byte) error {
	if len(signed) <= maxFrame {
		return nil
	}
	what := string(e.Link.Kind)
	if e.To != "" {
		what += " to " + e.To
	}
	return fmt.Errorf("%w: gateway %s: the %s is %d bytes signed, a link carries at most %d",
		ErrTooLarge, gw, what, len(signed), maxFrame)
}

// sendEarly queues an envelope for the peer at once — an answer, an end, a
// cancel, or (rec set) a call named by its message's journal seq
// (callid.go) — and returns without waiting for its outbox entry (and the
// call's record) to commit: the link may carry it meanwhile.
//
// That is safe because a second copy of anything is refused by the peer:
// of an answer, end or cancel by its hash; of such a call by its id, which
// the re-delivered message that made it computes again after a crash that
// lost the record (the message itself is durable before its call leaves:
// gateway.openByID). An acknowledgement that comes before the entry
// committed deletes it after its insert (the state applies its writes in
// order), and every write queued after the entry (a served conversation's
// end, the next answer, an answer's seen hash) commits with it or later, so
// none is durable without it. Answers leave from the pump's event gate
// (served.go), whose one goroutine would otherwise wait a commit per answer
// and hold back every event behind it. Neither an answer's entry nor a
// call's forces a commit: each rides the next one (or the batch delay's),
// since until it commits the peer's resend of the call (for an answer:
// the served row a restart answers from the journal) stands for it. A failed
// commit is logged and the entry dropped (it may have left already: the
// peer keeps what it got, and no resend follows). With served set, e
// answers that served conversation, whose row is deleted with the entry
// (sendAnswer). Called with g.mu held; it releases it.
func (g *gateway) sendEarly(e *envelope, signed []byte, rec *callRecord, served string) error {
	en := &entry{seq: g.m.db.newSeq(), id: e.Link.ID, env: signed}
	g.reserving++
	g.mu.Unlock()
	kind := e.Link.Kind
	var failed atomic.Bool
	done := func(err error) {
		if err == nil {
			return
		}
		g.log.Error("federation: envelope for the peer not kept", "kind", kind, "id", en.id, "error", err)
		failed.Store(true)
		g.drop(en)
	}
	// Queued before the sender can see the entry, so that the DELETE of
	// an acknowledgement follows its INSERT.
	switch {
	case rec != nil:
		// Its record and entry wait until the call has been open for
		// callRowsDelay: one answered and acknowledged by then has
		// cancelled both (deferred.go).
		seq, sent := en.seq, e.Link.Sent
		w := g.m.db.deferWrite(g.m.db.callRowsDelay, func() bool { return en.row.cancelled() && rec.row.cancelled() }, func() {
			g.m.db.enqueueCallThen(seq, g.name, en.id, rec, signed, sent, en.row.write, done)
		})
		en.deferred, rec.deferred = w, w
	case served != "":
		g.m.db.enqueueAnswerThen(en.seq, g.name, en.id, signed, e.Link.Sent, served, en.row.write, done)
	default:
		g.m.db.enqueueThen(en.seq, g.name, en.id, signed, e.Link.Sent, en.row.write, done)
	}
	g.mu.Lock()
	g.reserving--
	g.insert(en)
	g.mu.Unlock()
	if failed.Load() { // failed before it was in the outbox
		g.drop(en)
	}
	g.wake()
	// Queued for the peer now (it may reach the peer, and its answer come
	// back, before its entry commits): the observer hears of it at once.
	g.envelopeSeen(DirectionOut, kind)
	return nil
}

// insert puts en in the outbox in the order of its seq (entries queued
// together reach it in any order); with g.mu held.
func (g *gateway) insert(en *entry) {
	i := len(g.outbox)
	for i > 0 && g.outbox[i-1].seq > en.seq {
		i--
	}
	g.outbox = slices.Insert(g.outbox, i, en)
	g.outboxBytes += len(en.env)
	g.byID[en.id] = en
}

// drop removes en from the outbox if it is there.
func (g *gateway) drop(en *entry) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.byID[en.id] == en {
		delete(g.byID, en.id)
		if i := slices.Index(g.outbox, en); i >= 0 {
			g.outbox = slices.Delete(g.outbox, i, i+1)
			g.outboxBytes -= len(en.env)
		}
	}
}

func (g *gateway) wake() {
	select {
	case g.kick <- struct{}{}:
	default:
	}
}

// sender writes the outbox entries not yet written on the current link,
// in order, until the manager closes.
func (g *gateway) sender() {
	defer g.m.wg.Done()
	var envs [][]byte
	for {
		select {
		case <-g.m.closed:
			return
		case <-g.stopped:
			return
		case <-g.kick:
		}
		for {
			g.mu.Lock()
			c, gen := g.conn, g.gen
			var batch []*entry
			if c != nil {
				for _, e := range g.outbox {
					if e.sentOn != gen {
						e.sentOn = gen
						batch = append(batch, e)
						if len(batch) == 256 {
							break
						}
					}
				}
			}
			g.mu.Unlock()
			if len(batch) == 0 {
				break
			}
			// One batch for the link's writer: written together, with
			// the acknowledgements due then (linkwrite.go).
			envs = envs[:0]
			for _, e := range batch {
				envs = append(envs, e.env)
			}
			if err := c.writeAll(opBinary, envs...); err != nil {
				c.close(fmt.Errorf("write: %w", err))
			}
			clear(envs)
		}
	}
}

// mayHaveLeft is the sentOn of an entry loaded at start.
const mayHaveLeft = -1

// acked removes an acknowledged (or refused) entry from the outbox.
func (g *gateway) acked(id string) {
	g.mu.Lock()
	e := g.byID[id]
	if e != nil {
		g.unlink(e)
	}
	g.mu.Unlock()
	if e != nil && g.m.onAcked != nil {
		g.m.onAcked(e.env)
	}
	g.deleteRow(e)
	g.kickWaiters()
}

// kickWaiters wakes awaitAcks and awaitWaiting.
func (g *gateway) kickWaiters() {
	select {
	case g.ackKick <- struct{}{}:
	default:
	}
}

// awaitWaiting waits until no handler waits on a call of the gateway, or
// until expired; it reports whether none does.
func (g *gateway) awaitWaiting(expired <-chan struct{}) bool {
	for {
		g.mu.Lock()
		n := g.waiting
		g.mu.Unlock()
		if n == 0 {
			return true
		}
		select {
		case <-g.ackKick:
		case <-expired:
			return false
		}
	}
}

// unacked reports whether an outbox entry was written on link c, the
// gateway's current one — or with all, is still to be written on it — and
// is not acknowledged or refused yet.
func (g *gateway) unacked(c *conn, all bool) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.conn != c {
		return false
	}
	for _, e := range g.outbox {
		if all || e.sentOn == g.gen {
			return true
		}
	}
	return false
}

// awaitAcks waits until the peer acknowledged or refused every envelope
// written on link c (with all, every envelope of the outbox: the sender
// still writes them), or until expired, the link ends or the peer said
// goodbye; it reports
// whether none is left unacknowledged. The sender writes nothing more once
// the manager is stopping, so without all the wait only shrinks.
func (g *gateway) awaitAcks(c *conn, all bool, expired <-chan struct{}) bool {
	for g.unacked(c, all) {
		select {
		case <-g.ackKick:
		case <-expired:
			return false
		case <-c.done:
			return false
		case <-c.bye: // the peer drains: no acknowledgement comes any more
			return false
		}
	}
	return true
}

// withdraw removes the entry of envelope id from the outbox if it never
// left — not written on any link, in this life or (as far as is known) an
// earlier one — and reports whether it did: the peer never hears of it.
func (g *gateway) withdraw(id string) bool {
	g.mu.Lock()
	e := g.byID[id]
	if e == nil || e.sentOn != 0 {
		g.mu.Unlock()
		return false
	}
	g.unlink(e) // under g.mu: the sender cannot take it any more
	g.mu.Unlock()
	g.deleteRow(e)
	return true
}

// unlink removes e, which is in the outbox, from it; with g.mu held.
func (g *gateway) unlink(e *entry) {
	delete(g.byID, e.id)
	for i, o := range g.outbox {
		if o == e {
			g.outbox = append(g.outbox[:i:i], g.outbox[i+1:]...)
			g.outboxBytes -= len(e.env)
			break
		}
	}
}

// deleteRow deletes the outbox row of e, taken out of the outbox, in a
// coming commit (none if e is nil or its row was never written).
func (g *gateway) deleteRow(e *entry) {
	if e == nil {
		return
	}
	if e.row.cancel() { // no row, or none ever: nothing to delete
		g.m.db.settleDeferred(e.deferred)
		return
	}
	g.m.db.acked(e.seq, func(err error) { g.log.Error("federation: outbox", "error", err) })
}

// queued is how many envelopes wait for the peer's acknowledgement.
func (g *gateway) queued() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.outbox)
}

// isPrivileged reports a root that may never cross a link.
func isPrivileged(ns, name string) bool {
	switch ns {
	case schemas.PrivilegedNS, schemas.SystemNS:
		return true
	}
	return strings.EqualFold(name, "privileged-msg")
}
