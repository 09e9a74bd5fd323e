package pump

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// listener is a registered Listener with its pipeline state.
type listener struct {
	Listener
	// peerset is an agent's peers and usage instructions (AddPeers swaps it).
	peerset    atomic.Pointer[peerSet]
	errHandler xmlpipe.ErrorHandler
	// system marks the organism's own listeners: never reachable from outside.
	system bool
	queue  *schedQueue
	// only is the one-element target list of a message addressed by <to>
	// (shared, never modified).
	only []*listener

	handled atomic.Int64
	active  atomic.Int32
	// current[i] is worker i's running handler call (see workerSlot).
	current []workerSlot
	// detached are the running handler calls detached from its workers
	// (Detach).
	detached detachedCalls
	// timeout is the deadline of one handler call (0: none) and timeoutErr
	// the cause its context is cancelled with when it fires.
	timeout    time.Duration
	timeoutErr error
	// lingering counts handler calls abandoned after their context ended
	// (CancelGrace) that have not returned yet.
	lingering atomic.Int32
	// slotsHeld is how many global handler slots the listener's handlers
	// hold (guarded by the pump's handlerSlots.mu).
	slotsHeld int
	// load is how many deliveries are queued or running at the listener
	// (guarded by the pump's flightMu; see Pump.holdDelivery).
	load int
	// rooms is the room held here for new external messages admitted (see
	// Pump.roomAt) and not queued yet: counted against the share like
	// load, so that no other sender takes it meanwhile (guarded by the
	// pump's flightMu).
	rooms int
	// pace is how fast it works through its backlog (guarded by the
	// pump's flightMu; see Options.MaxQueueWait).
	pace pace
	// early is admission's last at-once refusal of a new external message
	// here, read without a lock by Pump.Refusing (nil: none).
	early atomic.Pointer[earlyRefusal]
	// lastError is the listener's most recent handler failure.
	lastError atomic.Pointer[listenerError]
	lastSeen  atomic.Int64 // unix nanos of the last handled message
	// workers counts the listener's running workers (RemoveListener waits
	// for them).
	workers sync.WaitGroup
	// tables counts the live routing snapshots holding the listener; at
	// zero its pipeline closes (Pump.unpinTable).
	tables atomic.Int32
}

// peerSet is an agent's outbound allow-list and the usage instructions
// built from it; immutable once published.
type peerSet struct {
	names []string
	set   map[string]bool // lower-cased names
	usage string
	// peers are the names resolved: descriptions and payload contracts, as
	// the agent's handler gets them (Metadata.Peers).
	peers []xmlpipe.Peer
}

// newPeerSet builds the set of names (usage is filled in by the caller).
func newPeerSet(names []string) *peerSet {
	ps := &peerSet{names: append([]string(nil), names...), set: make(map[string]bool, len(names))}
	for _, n := range names {
		ps.set[lower(n)] = true // names compare like routing: case-insensitively
	}
	return ps
}

// listenerError is a handler failure kept for introspection.
type listenerError struct {
	msg string
	at  time.Time
	// thread is the thread of the failed message and profile its profile
	// ("" for none): a client with a profile is shown the error only when
	// that thread is one it may see.
	thread, profile string
	// handled is the listener's handled count once the failing message is
	// done: while it has not grown past it, the last handling failed.
	handled int64
}

// work is one envelope waiting for the ingress stages.
type work struct {
	raw []byte
	// external marks bytes from outside the organism (transports, console).
	external bool
	// outlet receives failures and replies of an external message's conversation.
	outlet Outlet
	// principal is the authenticated session an external message was sent
	// by (InjectAs); nil when the transport vouches for no one.
	principal *Principal
	// user is the admission account an external message is charged to
	// ("" for none; see Options.MaxInFlight).
	user string
	// profile is the profile an external message's sender asks for
	// (WithProfile, Principal.Profile; "" for none).
	profile string
	// ctx and deadline bound the waits for room of external work its
	// injector reads itself (ctx nil on an ingress worker, which never
	// waits: see Pump.roomAt); busy is the *BusyError it was refused with,
	// for Inject to return.
	ctx      context.Context
	deadline time.Time
	busy     error
	// rooms are the target listeners where an external message holds room
	// (listener.rooms) until its deliveries are queued there or it ends
	// (guarded by the pump's flightMu; see Pump.roomAt).
	rooms []*listener
	// conv is the conversation of internal work.
	conv string
	// tbl is the routing snapshot of internal work's conversation (nil for
	// external work: the ingress stages pin one).
	tbl *table
	// prof is the profile of the thread internal work travels on, resolved
	// in tbl (nil: none), when profSet says the emitter knew it; otherwise
	// the ingress stages look it up.
	prof    *profile
	profSet bool
	// sender is the listener whose output this is (internal work), and
	// senderThread the thread its handler ran on (where a <huh> goes back).
	sender       *listener
	senderThread string
	// egress names the external party an internal reply goes to.
	egress string
	// payloadType is the payload contract of internal work (egress validation).
	payloadType *xmlpipe.PayloadType
	// canonical marks bytes built by the pump around a payload type whose
	// encoding is already exclusive C14N (Ingress.ReadCanonical skips the pass).
	canonical bool
	// isError marks a pump-generated <huh>/SystemError (never answered with another).
	isError bool
	// errOutput marks output of an error handler whose refusal is a dead
	// letter, not a <huh> to that error handler, which would answer it
	// again, for ever: a plain listener's, or an agent's past
	// MaxErrorHandlerRetries (delivery.quietOutput).
	errOutput bool
	// errRound is, for output of an error handler, how many refusals in a
	// row of that error handler's own output it answers, plus one (0: not
	// an error handler's output); for a pump-generated error about such
	// output, the same count, which its delivery carries
	// (delivery.errRound).
	errRound int
	// spends marks a forward that made its sender's thread spent
	// (registry.Threads.ForwardAs): its conversation ends the spent
	// threads when it completes (convDone).
	spends bool
	// ref is the correlation ref the sender gave this message (a failure
	// about it goes back with it).
	ref string
	// note is what a pump-generated error says beyond its payload: its
	// detail (xmlpipe.DeliveryError.Detail), cause and origin (nil for
	// other work, and for an error the pump knows nothing more of).
	note *errorNote
	// about is what a failure about this message is told apart by
	// (Event.About; delivery.about of its sender's handling).
	about string
	// wokeWorker records that the ingress stages handed this envelope to an
	// idle listener worker (see yieldToWoken). Atomic: a held turn's
	// hand-off runs on another goroutine after the ingress stages of its
	// message returned (turnStart), while the ingress worker reads it.
	wokeWorker atomic.Bool
	depth      int
	// admitted is when the work entered the pump (latency measurement).
	admitted time.Time
	// done, when set, is signalled once the work finished the ingress stages
	// (err nil: accepted, journaled as seq when seq > 0).
	done func(thread string, seq int64, err error)
	// accepted, when set, receives the canonical envelope once the work is
	// accepted, just before done (SendEnvelopeAccepted).
	accepted func(env []byte)
	// parent is the delivery mark of the message whose handler emitted this
	// work; released once this work is journaled (or failed).
	parent *deliveryMark
	// after is what the handling that emitted this work runs once its
	// outputs are journaled (AfterJournal; nil: nothing).
	after *afterJournal
	// prune is the thread a reply travels back from: it ends (with its
	// sub-threads) once the reply has passed the ingress stages, so a rejected
	// reply's <huh> still finds its producer on it.
	prune string
	// answers is the delivery a reply answers, or whose handling sent a
	// message, when its sender has no error handler (or, for a reply, it
	// is quiet output of one): a refused reply's or message's <huh> then
	// goes to the caller (tellFailure, tellUnrouted), which would
	// otherwise wait for an answer that never comes.
	answers *delivery
	// answered is a reply's payload as its sender answered it, when the
	// pump turned it into the calling agent's text (asAgentText): the
	// delivery gate judges both (GateMessage.Answered).
	answered []byte
	// recovered is the journal seq of a message re-delivered by Recover
	// (never journaled twice).
	recovered int64
	// journaled is when a recovered message was journaled (zero: unknown).
	journaled time.Time
	// turn, when set, is the handler call this work is an output of: what
	// the ingress stages journal joins the turn's group, and what follows
	// waits for it (see turn).
	turn *turn
	// batch, when set, makes this work a whole turn handed to the ingress
	// workers: its outputs, to run through the stages together (runTurn).
	batch []*work
}

// delivery is one decoded message bound for one listener.
type delivery struct {
	conv, thread string
	from, to     string
	// at is the listener the delivery is queued or running at, and user the
	// admission account of the external message it carries ("" for none).
	at   *listener
	user string
	// retry marks a delivery whose handling Halt interrupted: handled again
	// after Unhalt, its message is not appended to the history twice.
	retry bool
	// slotFreed marks a delivery whose handler slot was freed before its
	// handling finished (a parked call: see handlerCall.abandon).
	slotFreed bool
	// stopped marks a journaled delivery whose handler the organism's stop
	// ended (ErrStopping): finished undelivered, for Recover.
	stopped bool
	// journaled is when a message re-delivered after a restart was
	// journaled (zero for any other): its history slot may be there
	// already (see recordedAlready).
	journaled time.Time
	// tbl is the routing snapshot of the conversation (see convState.tbl).
	tbl *table
	// prof is the profile of the thread the message travels on, resolved
	// in tbl (nil: none).
	prof         *profile
	payloadName  string
	payload      any
	payloadBytes []byte
	errPayload   *xmlpipe.DeliveryError
	// errRound counts, for an error delivery, the refusals in a row of the
	// listener's error handler's own output that led to it (0: the error
	// is about other output; see quietOutput).
	errRound int
	// inReplyTo is the correlation ref the message answers (see
	// correlation.go); "" for most.
	inReplyTo     string
	depth         int
	senderOutside bool
	// senderThread is the thread the sending listener's handler ran on (where
	// a <huh> about this message goes back); "" for external senders.
	senderThread string
	admitted     time.Time
	// mark is released when the handler finished (nil: not journaled).
	mark *deliveryMark
	// outputs are the handler's messages, accounted but not yet through the
	// ingress stages (see Pump.emit). The first handling's first output
	// goes in one, never handed out twice (a turn's outputs may still be
	// on the ingress workers when the message is handled again).
	outputs  []*work
	one      [1]*work
	oneTaken bool
	// turn, when set, gathers what the handling produced, to be journaled
	// as one group once its outputs passed the ingress stages (runTurn).
	turn *turn
	// after, when set, is what runs once the handling's outputs are
	// journaled (AfterJournal); each output holds a reference.
	after *afterJournal
	// handling identifies the current handling of the message in
	// Event.About: its journal seq, else a negative number of its own;
	// told counts the handling's outputs and failures told so far (see
	// about).
	handling int64
	told     int
}

// workQueue is the unbounded FIFO feeding the ingress workers. External
// admission is bounded separately (Options.MaxInFlight), so internal re-entry
// never blocks a handler.
type workQueue struct {
	mu     sync.Mutex
	cond   *sync.Cond
	items  []*work
	head   int
	closed bool
}

func newWorkQueue() *workQueue {
	q := &workQueue{}
	q.cond = sync.NewCond(&q.mu)
	return q
}

func (q *workQueue) push(w *work) bool {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return false
	}
	q.items = append(q.items, w)
	q.mu.Unlock()
	q.cond.Signal()
	return true
}

func (q *workQueue) pop() (*work, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.head == len(q.items) {
		if q.closed {
			return nil, false
		}
		q.cond.Wait()
	}
	w := q.items[q.head]
	q.items[q.head] = nil
	q.head++
	if q.head == len(q.items) {
		q.items = q.items[:0]
		q.head = 0
	} else if q.head > 1024 && q.head*2 > len(q.items) {
		n := copy(q.items, q.items[q.head:])
		q.items = q.items[:n]
		q.head = 0
	}
	return w, true
}

func (q *workQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.cond.Broadcast()
}
