package federation

import (
	"crypto/sha256"
	"runtime"
	"sync"

	"github.com/xml-pipeline/xmlpipe/pump/federation/envsig"
)

// inbound is one envelope read from a link, on its way through the
// verification stage (parallel) to delivery (in the link's order).
type inbound struct {
	b []byte
	// Set by the verification stage before ready closes:
	verr error     // the signature's verdict
	e    *envelope // the parsed envelope (nil when perr is set)
	perr error     // why it does not parse
	dup  bool      // its hash is recorded: received before
	serr error     // the seen lookup failed
	// hash is the envelope's sha256 (not for calls and meta traffic);
	// inMemory says the seen lookup is left to delivery, which answers it
	// from memory (recent) in the link's order.
	hash     [32]byte
	inMemory bool
	// ready is closed once the fields above are set.
	ready chan struct{}
}

// orderedStage runs check on up to workers envelopes at once and hands
// each to deliver in the order they were added, each once check returned
// for it: signatures are verified in parallel while what they carry is
// delivered in the link's order. Its workers live as long as the stage (a
// goroutine per envelope grew its stack anew for every verification).
type orderedStage struct {
	check   func(*inbound)
	deliver func(*inbound)
	work    chan *inbound
	order   chan *inbound
	done    chan struct{}
	wg      sync.WaitGroup
}

// newOrderedStage starts the stage: at most workers checks at once, at
// most pending envelopes between the reader and delivery (add blocks
// beyond, which slows the reader down: backpressure on the peer).
func newOrderedStage(workers, pending int, check, deliver func(*inbound)) *orderedStage {
	s := &orderedStage{check: check, deliver: deliver, work: make(chan *inbound, pending),
		order: make(chan *inbound, pending), done: make(chan struct{})}
	s.wg.Add(workers)
	for range workers {
		go func() {
			defer s.wg.Done()
			for in := range s.work {
				s.check(in)
				close(in.ready)
			}
		}()
	}
	go func() {
		defer close(s.done)
		for in := range s.order {
			<-in.ready
			s.deliver(in)
		}
	}()
	return s
}

// verifyWorkers is how many envelopes of one link are verified at once.
func verifyWorkers() int { return max(2, runtime.GOMAXPROCS(0)) }

// add queues b: its check starts as soon as a worker is free. Each
// envelope waits in order no longer than in work, so work never fills
// before order does.
func (s *orderedStage) add(b []byte) {
	in := &inbound{b: b, ready: make(chan struct{})}
	s.order <- in
	s.work <- in
}

// close waits until every envelope added was checked and delivered.
func (s *orderedStage) close() {
	close(s.work)
	close(s.order)
	<-s.done
	s.wg.Wait()
}

// checkInbound is the parallel part of receiving an envelope: its
// signature, its parse and whether it was received before.
func (g *gateway) checkInbound(in *inbound) {
	if in.verr = envsig.Verify(g.peerKey(), in.b); in.verr != nil {
		if e, err := parse(in.b); err == nil {
			in.e = e // for its id in the refusal
		}
		return
	}
	if in.e, in.perr = parse(in.b); in.perr != nil {
		return
	}
	// A call's copies are refused by its received row (serveCall); meta
	// traffic is never recorded.
	if k := in.e.Link.Kind; k != KindCall && k != KindMeta && k != KindMetaAnswer {
		in.hash = sha256.Sum256(in.b)
		// Memory records a hash at delivery, for the kinds whose delivery
		// records it in the table after (ackOnceSeen); an unknown kind is
		// refused there and recorded nowhere.
		if knownSeenKind(k) && g.m.db.recent.seenCovers(in.e.Link.Sent, g.m.now()) {
			in.inMemory = true
			return
		}
		in.dup, in.serr = g.m.db.seenHash(in.hash, in.e.Link.Sent)
	}
}

// knownSeenKind reports the kinds of envelopes whose hash delivery records
// once it processed them.
func knownSeenKind(k Kind) bool {
	switch k {
	case KindReply, KindHuh, KindEnd, KindCancel:
		return true
	}
	return false
}

// acker queues a link's acknowledgements for its writer (conn.writeLoop),
// so that the group commit that makes them durable never waits on the
// socket.
// It also counts what the link owes the peer — the envelopes taken from it
// whose acknowledgement or refusal is not written yet — so that a graceful
// stop can wait for them (drain) rather than leave the peer to resend
// envelopes this side already processed.
type acker struct {
	c    *conn
	mu   sync.Mutex
	list []frame
	// kick wakes the link's writer (linkWriter.kick).
	kick chan struct{}
	// taken is how many envelopes were taken from the link and not yet
	// delivered; owed counts, by link id, those delivered whose frame is
	// not written yet; draining refuses further envelopes (take).
	taken    int
	owed     map[string]int
	draining bool
	// paidKick is kicked (never blocking) whenever taken or owed shrink.
	paidKick chan struct{}
}

func newAcker(c *conn, kick chan struct{}) *acker {
	return &acker{c: c, kick: kick, paidKick: make(chan struct{}, 1)}
}

// send queues f; it never blocks.
func (a *acker) send(f frame) {
	a.mu.Lock()
	a.list = append(a.list, f)
	a.mu.Unlock()
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// take counts one more envelope read from the link, unless the link is
// draining: then it reports false, and the envelope is not processed (the
// peer, lacking its acknowledgement, sends it again on the next link).
func (a *acker) take() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.draining {
		return false
	}
	a.taken++
	return true
}

// delivered ends what take began: the envelope went through delivery,
// which registered what it owes the peer for it (owe).
func (a *acker) delivered() {
	a.mu.Lock()
	a.taken--
	a.mu.Unlock()
	a.paid()
}

// owe records that the frame answering envelope id (an ack or a nack) is
// still to be written.
func (a *acker) owe(id string) {
	a.mu.Lock()
	if a.owed == nil {
		a.owed = map[string]int{}
	}
	a.owed[id]++
	a.mu.Unlock()
}

// forgive drops what owe recorded for id: delivery left it unanswered on
// purpose (the peer resends it).
func (a *acker) forgive(id string) {
	a.mu.Lock()
	a.settle(id)
	a.mu.Unlock()
	a.paid()
}

// settle drops one debt for id (a.mu held).
func (a *acker) settle(id string) {
	switch n := a.owed[id]; {
	case n > 1:
		a.owed[id] = n - 1
	case n == 1:
		delete(a.owed, id)
	}
}

// paid wakes drain.
func (a *acker) paid() {
	select {
	case a.paidKick <- struct{}{}:
	default:
	}
}

// drain stops taking envelopes from the link and waits until every one
// taken is delivered and answered by a written frame, or until expired or
// the link ends; it reports whether nothing is owed.
func (a *acker) drain(expired <-chan struct{}) bool {
	a.mu.Lock()
	a.draining = true
	a.mu.Unlock()
	for {
		a.mu.Lock()
		clear := a.taken == 0 && len(a.owed) == 0
		a.mu.Unlock()
		if clear {
			return true
		}
		select {
		case <-a.paidKick:
		case <-expired:
			return false
		case <-a.c.done:
			return false
		}
	}
}

// takeList returns the acknowledgements queued and empties the list; spare
// is a slice the list may reuse.
func (a *acker) takeList(spare []frame) []frame {
	a.mu.Lock()
	defer a.mu.Unlock()
	l := a.list
	a.list = spare[:0]
	return l
}

// settleAll records the frames of batch written (the writer wrote them),
// and wakes drain.
func (a *acker) settleAll(batch []frame) {
	if len(batch) == 0 {
		return
	}
	a.mu.Lock()
	for _, f := range batch {
		a.settle(f.ID)
	}
	a.mu.Unlock()
	a.paid()
}
