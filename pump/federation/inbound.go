package federation

import (
	"crypto/sha256"
	"fmt"
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
	// done says the fields above are set (orderedStage.mu).
	done bool
}

// orderedStage runs check on up to workers envelopes at once and hands
// each to deliver in the order they were added, each once check returned
// for it: signatures are verified in parallel while what they carry is
// delivered in the link's order. The worker whose check completes the
// head of the order delivers it, and what follows it checked already, on
// its own goroutine: a delivery costs no hand-off to another goroutine
// (one delivering at a time keeps the order). Its workers live as long as
// the stage (a goroutine per envelope grew its stack anew for every
// verification).
type orderedStage struct {
	check   func(*inbound)
	deliver func(*inbound)
	work    chan *inbound
	// slots bounds the envelopes between the reader and delivery.
	slots chan struct{}
	wg    sync.WaitGroup

	mu sync.Mutex
	// order are the envelopes added and not delivered yet, oldest first;
	// delivering says a worker is delivering from its head.
	order      []*inbound
	delivering bool
}

// newOrderedStage starts the stage: at most workers checks at once, at
// most pending envelopes between the reader and delivery (add blocks
// beyond, which slows the reader down: backpressure on the peer).
func newOrderedStage(workers, pending int, check, deliver func(*inbound)) *orderedStage {
	s := &orderedStage{check: check, deliver: deliver, work: make(chan *inbound, pending),
		slots: make(chan struct{}, pending)}
	s.wg.Add(workers)
	for range workers {
		go func() {
			defer s.wg.Done()
			for in := range s.work {
				s.check(in)
				s.checked(in)
			}
		}()
	}
	return s
}

// checked marks in checked and, unless another worker is delivering,
// delivers the head of the order for as long as it is checked.
func (s *orderedStage) checked(in *inbound) {
	s.mu.Lock()
	in.done = true
	if s.delivering {
		s.mu.Unlock() // the worker delivering comes to it
		return
	}
	s.delivering = true
	for len(s.order) > 0 && s.order[0].done {
		head := s.order[0]
		s.order[0] = nil
		s.order = s.order[1:]
		s.mu.Unlock()
		s.deliver(head)
		<-s.slots
		s.mu.Lock()
	}
	s.delivering = false
	s.mu.Unlock()
}

// verifyWorkers is how many envelopes of one link are verified at once.
func verifyWorkers() int { return max(2, runtime.GOMAXPROCS(0)) }

// add queues b: its check starts as soon as a worker is free.
func (s *orderedStage) add(b []byte) {
	in := &inbound{b: b}
	s.slots <- struct{}{}
	s.mu.Lock()
	s.order = append(s.order, in)
	s.mu.Unlock()
	s.work <- in
}

// close waits until every envelope added was checked and delivered.
func (s *orderedStage) close() {
	close(s.work)
	s.wg.Wait()
}

// checkInbound is the parallel part of receiving an envelope: its
// signature, its parse and whether it was received before.
func (g *gateway) checkInbound(in *inbound) {
	if in.verr = envsig.Verify(g.trusted, in.b); in.verr != nil {
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
		in.dup, in.serr = g.m.db.seenHash(in.hash)
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

// acker writes a link's acknowledgements on a goroutine of its own, so
// that the group commit that makes them durable never waits on the socket;
// it writes them with the outbox entries ready at the time, after them
// (conn.flush).
type acker struct {
	c  *conn
	mu sync.Mutex
	// list is what send queued; spare the slice take handed out last
	// (reused: take runs under the link's wmu, after its previous batch
	// was written).
	list, spare []frame
	kick        chan struct{}
}

func newAcker(c *conn) *acker {
	a := &acker{c: c, kick: make(chan struct{}, 1)}
	go a.run()
	return a
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

// take hands out the queued acknowledgements; with the link's wmu held.
func (a *acker) take() []frame {
	a.mu.Lock()
	defer a.mu.Unlock()
	l := a.list
	a.list, a.spare = a.spare[:0], l
	return l
}

func (a *acker) run() {
	for {
		select {
		case <-a.c.done:
			return
		case <-a.kick:
		}
		if err := a.c.flush(); err != nil {
			a.c.close(fmt.Errorf("write: %w", err))
			return // the peer resends what it lacks
		}
	}
}
