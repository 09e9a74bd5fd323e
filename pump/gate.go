package pump

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
)

// GateVerdict is what a DeliveryGate decides about a message about to be
// queued to its target listener.
type GateVerdict uint8

// The verdicts.
const (
	// GateDeliver: the message goes on to its listener.
	GateDeliver GateVerdict = iota
	// GateRefuse: the message is dropped — no handler sees it — and its
	// sender gets GateDecision.Refusal (a listener through its error
	// handler, on the thread it works on; an outside sender as the reply of
	// its conversation). The message counts as delivered.
	GateRefuse
	// GateHold: the message waits, out of its listener's queue and not
	// marked delivered, until Release delivers it or RefuseHeld refuses it
	// (both by GateDecision.HoldID). A held message keeps its conversation
	// running but is no work in flight: a graceful shutdown does not wait
	// for it. It is re-delivered after a restart, and the gate is asked
	// again (GateMessage.Recovered).
	GateHold
)

// GateMessage is a message about to be queued to a listener, as a
// DeliveryGate sees it. The gate must not keep Payload or Envelope beyond
// the message's life unless it copies them (they are never modified).
type GateMessage struct {
	// Seq is the message's journal seq (0: not journaled). With Target it
	// identifies the delivery across a restart.
	Seq int64
	// Conversation and Thread are the conversation and the thread the
	// message travels on.
	Conversation, Thread string
	// From is the sender's name; FromAgent marks an LLM agent, FromOutside
	// a sender outside the organism (a console, a bus client).
	From        string
	FromAgent   bool
	FromOutside bool
	// Target is the listener the message is about to reach; TargetAgent
	// marks an LLM agent.
	Target      string
	TargetAgent bool
	// User is the user who began the conversation ("" for none).
	User string
	// PayloadName is the payload's root tag and Payload its canonical
	// bytes; Envelope is the canonical envelope.
	PayloadName string
	Payload     []byte
	Envelope    []byte
	// Answered is, for a reply the pump turned into the calling agent's
	// text payload (its JSON form as the agent's Text: a tool's result, a
	// callable's answer), the reply's payload XML as its sender answered;
	// nil for any other message, and for a reply re-delivered after a
	// restart (the journal keeps the agent's form).
	Answered []byte
	// Detail is, for a failure (FailureGate), what it says beyond its
	// canned text (xmlpipe.DeliveryError.Detail); "" for any other message.
	Detail string
	// Recovered marks a message re-delivered after a restart (see Recover):
	// a gate that held it before finds its hold under the same Seq and
	// Target.
	Recovered bool
}

// GateDecision is a DeliveryGate's answer.
type GateDecision struct {
	Verdict GateVerdict
	// Refusal is what the sender gets (GateRefuse; nil: a generic one).
	Refusal *xmlpipe.Refusal
	// HoldID names a held message (GateHold): Release and RefuseHeld take
	// it. It must be unique among the messages held at once.
	HoldID string
}

// DeliveryGate decides, for every message about to be queued to a
// listener, whether it is delivered, refused or held (for a human to
// approve). The organism's guardian and approvals implement it. Check is
// called on the pump's own goroutines, once per target listener: it must
// not block for long and must not call back into the pump, except Release
// and RefuseHeld, which it may call from any other goroutine at any time.
type DeliveryGate interface {
	Check(m *GateMessage) GateDecision
	// Dropped reports a held message the pump dropped without a decision
	// (cause: ErrConversationKilled — its conversation was killed; or
	// ErrCancelled — its answer was cancelled). It is called before the
	// conversation's EventComplete is published.
	Dropped(holdID string, cause error)
}

// FailureGate is a DeliveryGate that also judges the failures about to
// reach a listener's error handler — a <huh> or SystemError and its detail
// (GateMessage.Detail), whatever their text carries of a handler's error —
// before the listener sees them: CheckFailure returns the refusal that
// replaces the failure, or nil to deliver it. It cannot hold one. The
// pump calls it like Check, on its own goroutines.
type FailureGate interface {
	CheckFailure(m *GateMessage) *xmlpipe.Refusal
}

// Gate errors.
var (
	// ErrNotHeld: Release or RefuseHeld named no held message (never held,
	// already decided, dropped, or — after a restart — not re-delivered
	// yet).
	ErrNotHeld = errors.New("pump: no such held message")
)

// gateBox holds the gate (an atomic.Pointer needs a concrete type).
type gateBox struct{ g DeliveryGate }

// SetGate installs g as the delivery gate (nil: none, every message is
// delivered). It may be called at any time; messages already held stay
// held.
func (p *Pump) SetGate(g DeliveryGate) {
	if g == nil {
		p.dgate.Store(nil)
		return
	}
	p.dgate.Store(&gateBox{g: g})
}

// deliveryGate returns the installed gate, or nil.
func (p *Pump) deliveryGate() DeliveryGate {
	if b := p.dgate.Load(); b != nil {
		return b.g
	}
	return nil
}

// heldDelivery is a message held by the gate.
type heldDelivery struct {
	id string
	d  *delivery
	l  *listener
	// sender is the listener that sent it (nil: an outside sender, or the
	// organism itself), senderThread the thread its handler ran on.
	sender       *listener
	senderThread string
	outside      bool
	// answer is set when the message is an answer travelling back to the
	// listener that called (Respond): that caller waits for it.
	answer bool
	// to and env are the envelope's <to> and canonical bytes (events).
	to    string
	env   []byte
	since time.Time
}

// heldSet is the pump's held messages by hold id, and the gate decisions
// in progress by conversation (what Kill waits for).
type heldSet struct {
	mu sync.Mutex
	m  map[string]*heldDelivery
	n  atomic.Int32
	// deciding counts the gate decisions in progress by conversation;
	// decided (on mu) is signalled when one ends.
	deciding map[string]int
	decided  *sync.Cond
}

// begin counts a gate decision about conv in progress.
func (s *heldSet) begin(conv string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.deciding == nil {
		s.deciding = map[string]int{}
	}
	s.deciding[conv]++
}

// end counts the gate decision about conv done.
func (s *heldSet) end(conv string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.deciding[conv]--; s.deciding[conv] <= 0 {
		delete(s.deciding, conv)
	}
	if s.decided != nil {
		s.decided.Broadcast()
	}
}

// await waits until no gate decision about conv is in progress.
func (s *heldSet) await(conv string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.deciding[conv] > 0 {
		if s.decided == nil {
			s.decided = sync.NewCond(&s.mu)
		}
		s.decided.Wait()
	}
}

// put adds h; false when its id is held already.
func (s *heldSet) put(h *heldDelivery) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]*heldDelivery{}
	}
	if _, dup := s.m[h.id]; dup {
		return false
	}
	s.m[h.id] = h
	s.n.Add(1)
	return true
}

// take removes and returns the held message id (nil: none).
func (s *heldSet) take(id string) *heldDelivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.m[id]
	if h != nil {
		delete(s.m, id)
		s.n.Add(-1)
	}
	return h
}

// takeConv removes and returns the held messages of conversation conv.
func (s *heldSet) takeConv(conv string) []*heldDelivery {
	if s.n.Load() == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*heldDelivery
	for id, h := range s.m {
		if h.d.conv == conv {
			out = append(out, h)
			delete(s.m, id)
			s.n.Add(-1)
		}
	}
	return out
}

// HeldMessage describes a message held by the delivery gate.
type HeldMessage struct {
	// ID is the hold id the gate gave it.
	ID string
	// Conversation and Thread are where it travels.
	Conversation, Thread string
	// From is its sender, Listener the listener it waits to reach.
	From, Listener string
	// PayloadName is its payload's root tag.
	PayloadName string
	// Since is when it was held.
	Since time.Time
}

// Held lists the messages the delivery gate holds, oldest first.
func (p *Pump) Held() []HeldMessage {
	p.held.mu.Lock()
	out := make([]HeldMessage, 0, len(p.held.m))
	for _, h := range p.held.m {
		out = append(out, HeldMessage{ID: h.id, Conversation: h.d.conv, Thread: h.d.thread, From: h.d.from,
			Listener: h.l.Name, PayloadName: h.d.payloadName, Since: h.since})
	}
	p.held.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Since.Before(out[j].Since) })
	return out
}

// failureRefused asks a FailureGate about failure m (payload pb, detail
// detail) bound for l, sent by w's sender: the refusal that replaces it,
// or nil.
func (p *Pump) failureRefused(w *work, m *stage.Inbound, l *listener, pb []byte, detail string) *xmlpipe.Refusal {
	g, ok := p.deliveryGate().(FailureGate)
	if !ok {
		return nil
	}
	return g.CheckFailure(&GateMessage{Conversation: w.conv, Thread: m.Thread, From: m.From,
		FromAgent: w.sender != nil && w.sender.Agent, Target: l.Name, TargetAgent: l.Agent, User: p.threadUser(m.Thread),
		PayloadName: m.PayloadName, Payload: pb, Envelope: m.Canonical, Detail: detail})
}

// gateStops asks the gate about delivery d of message m (journaled as seq)
// to l, before it is queued. It reports true when the gate took the
// delivery (refused or held it): the caller must not queue it. Without a
// gate it costs one atomic load.
func (p *Pump) gateStops(w *work, m *stage.Inbound, tbl *table, l *listener, d *delivery, seq int64) bool {
	g := p.deliveryGate()
	if g == nil {
		return false
	}
	// Kill waits for the decision (with its drop, below) to end: when it
	// returns, every hold of the conversation is dropped and the gate told.
	p.held.begin(d.conv)
	decided := sync.OnceFunc(func() { p.held.end(d.conv) })
	defer decided()
	if p.killed(d.conv) {
		// No new hold (nor approval) for a killed conversation: queued, the
		// delivery is dropped as a dead letter before its handler runs
		// (handle).
		return false
	}
	sender := w.sender
	if sender == nil && !w.external {
		sender = tbl.lookup(m.From) // a recovered internal message
	}
	gm := GateMessage{Seq: seq, Conversation: d.conv, Thread: d.thread, From: m.From,
		FromAgent: sender != nil && sender.Agent, FromOutside: w.external, Target: l.Name, TargetAgent: l.Agent,
		User: p.threadUser(d.thread), PayloadName: m.PayloadName, Payload: d.payloadBytes, Envelope: m.Canonical,
		Answered: w.answered, Recovered: w.recovered != 0}
	dec := g.Check(&gm)
	if dec.Verdict == GateDeliver {
		return false
	}
	h := &heldDelivery{id: dec.HoldID, d: d, l: l, sender: sender, senderThread: w.senderThread, outside: w.external,
		answer: !w.external && (w.prune != "" || d.inReplyTo != ""), to: m.To, env: m.Canonical, since: p.opts.Clock()}
	if h.senderThread == "" && sender != nil {
		if _, thread, err := p.threads.Caller(d.thread); err == nil {
			h.senderThread = thread // the thread the sender worked on: where an answer would go
		}
	}
	p.convHold(d.conv)
	switch dec.Verdict {
	case GateHold:
		if dec.HoldID == "" || !p.held.put(h) {
			p.log.Error("delivery gate: hold id missing or already held; the message waits for a restart",
				"hold", dec.HoldID, "thread", d.thread, "listener", l.Name)
			p.convDone(d.conv) // not marked delivered: recovery re-delivers it
			return true
		}
		if p.killed(d.conv) && p.held.take(h.id) != nil {
			// Kill marked the conversation while the gate decided (the gate
			// may have created what the hold stands for, an approval,
			// already): the hold is dropped, and the gate told, before Kill
			// returns (it waits for this decision). Had Kill's sweep
			// (dropHeld) found the hold first, take finds nothing.
			p.dropHold(g, h, p.dropCause(d.conv))
			return true
		}
		p.log.Info("message held by the delivery gate", "hold", dec.HoldID, "thread", d.thread, "from", d.from,
			"listener", l.Name, "payload", d.payloadName)
	default:
		r := dec.Refusal
		if r == nil {
			r = stage.NewRefusal("refused by the organism's delivery gate", "", stage.SeverityMedium)
		}
		decided() // no hold: Kill need not wait for the refusal's answer
		p.refuseHeld(h, r)
	}
	return true
}

// AwaitGate waits until no delivery-gate decision about conversation conv
// is in progress. A decision about a held message made while the gate was
// still deciding to hold it (its approval already visible, the hold not
// yet taken: Release or RefuseHeld answer ErrNotHeld) can be carried out
// after it: the hold is then in Held.
func (p *Pump) AwaitGate(conv string) { p.held.await(conv) }

// Release delivers the held message id to its listener (a human approved
// it): it is queued as it would have been, and handled in turn. It fails
// with ErrNotHeld when no message is held under id, and with ErrClosed once
// the pump shuts down (the message stays held, to be re-delivered after a
// restart).
func (p *Pump) Release(id string) error {
	if p.closing.Load() {
		return ErrClosed
	}
	h := p.held.take(id)
	if h == nil {
		return fmt.Errorf("%w: %s", ErrNotHeld, id)
	}
	d, l := h.d, h.l
	if p.killed(d.conv) {
		cause := p.dropCause(d.conv)
		p.deadLetter(d.conv, d.thread, d.from, l.Name, d.payloadName, nil, p.dropReason(d.conv)+" while the message was held")
		d.mark.release()
		p.convDone(d.conv)
		return fmt.Errorf("%w: %s", cause, id)
	}
	p.log.Info("held message released", "hold", id, "thread", d.thread, "listener", l.Name)
	p.holdDelivery(d)
	p.publish(nil, Event{Kind: EventMessage, Time: p.opts.Clock(), Conversation: d.conv, Thread: d.thread,
		From: d.from, To: h.to, Listener: l.Name, PayloadName: d.payloadName, Payload: d.payload, Envelope: h.env,
		Profile: d.prof.nameOf()})
	if ok, _ := p.enqueue(l, d); !ok {
		p.releaseDelivery(d)
		p.deadLetter(d.conv, d.thread, d.from, l.Name, d.payloadName, h.env, "listener pipeline closed")
		p.convDone(d.conv)
	}
	return nil
}

// RefuseHeld refuses the held message id (a human denied it, or its wait
// timed out): its listener never sees it and its sender gets r. It fails
// with ErrNotHeld when no message is held under id.
func (p *Pump) RefuseHeld(id string, r *xmlpipe.Refusal) error {
	h := p.held.take(id)
	if h == nil {
		return fmt.Errorf("%w: %s", ErrNotHeld, id)
	}
	if r == nil {
		r = stage.NewRefusal("refused", "", stage.SeverityMedium)
	}
	p.log.Info("held message refused", "hold", id, "thread", h.d.thread, "listener", h.l.Name, "reason", r.Reason)
	p.refuseHeld(h, r)
	return nil
}

// refuseHeld answers the sender of h with r and finishes the delivery: a
// listener gets the refusal as an error message on the thread it worked on
// (journaled like a <huh>), an outside sender as the reply of its
// conversation; a refused answer is replaced by the refusal, which goes to
// the caller waiting for it. The message is then marked delivered — once
// the refusal is journaled, so a crash in between re-delivers it rather
// than losing the answer.
func (p *Pump) refuseHeld(h *heldDelivery, r *xmlpipe.Refusal) {
	d := h.d
	body, err := p.core.Refusal.AppendPayload(nil, r)
	switch {
	case err != nil:
		p.deadLetter(d.conv, d.thread, "core", d.from, "refusal", nil, "refusal not encodable: "+err.Error())
	case h.answer:
		// The answering listener's part is over (its thread is pruned once
		// the answer is accepted): told, it could answer nobody, and a tool
		// has no one to tell. The caller waits for this answer: it gets the
		// refusal in its place, on its own thread, bound to its call by the
		// answer's ref.
		env := stage.AppendEnvelopeInReplyTo(nil, "core", h.l.Name, d.thread, d.inReplyTo, body)
		p.publish(nil, Event{Kind: EventRefusal, Time: p.opts.Clock(), Conversation: d.conv, Thread: d.thread,
			From: "core", To: h.l.Name, Listener: h.l.Name, PayloadName: p.core.Refusal.Name(), Payload: r,
			Error: r.Summary()})
		p.enqueueInternal(&work{raw: env, conv: d.conv, tbl: d.tbl, isError: true, depth: d.depth,
			payloadType: p.core.Refusal, admitted: p.opts.Clock(), parent: d.mark.retain()})
	case h.sender != nil && !h.outside:
		thread := h.senderThread
		if thread == "" {
			thread = d.thread
		}
		// The refused message was sent with the ref of its thread
		// (correlation.go): the refusal carries it back, so the sender
		// knows which of its calls was refused.
		ref := p.threads.Ref(d.thread)
		env := stage.AppendEnvelopeInReplyTo(nil, "core", h.sender.Name, thread, ref, body)
		p.publish(nil, Event{Kind: EventRefusal, Time: p.opts.Clock(), Conversation: d.conv, Thread: thread,
			From: "core", To: h.sender.Name, Listener: h.l.Name, PayloadName: p.core.Refusal.Name(), Payload: r,
			Error: r.Summary()})
		p.enqueueInternal(&work{raw: env, conv: d.conv, tbl: d.tbl, isError: true, depth: d.depth,
			payloadType: p.core.Refusal, admitted: p.opts.Clock(), parent: d.mark.retain()})
	case h.outside:
		env := stage.AppendEnvelope(nil, "core", d.from, d.thread, body)
		p.journalIn(nil, Record{Direction: Outbound, Kind: RecordRefusal, Conversation: d.conv, Thread: d.thread,
			From: "core", To: d.from, Listener: h.l.Name, PayloadTag: p.core.Refusal.Name(), Envelope: env,
			Diagnostics: []failure.Diagnostic{{Msg: r.Summary()}}, Profile: d.prof.nameOf()}, func(int64) {
			p.emitToConv(d.conv, Event{Kind: EventReply, Time: p.opts.Clock(), Conversation: d.conv, Thread: d.thread,
				From: "core", To: d.from, Listener: h.l.Name, PayloadName: p.core.Refusal.Name(), Payload: r,
				Envelope: env, Error: r.Summary(), Profile: d.prof.nameOf()})
		})
	default: // the organism's own traffic (system): nobody to tell
		p.deadLetter(d.conv, d.thread, d.from, h.l.Name, d.payloadName, nil, "refused: "+r.Summary())
	}
	d.mark.release()
	p.convDone(d.conv)
}

// Audit journals r — a governance decision (RecordDecision), say — in the
// pump's journal, when it has one.
func (p *Pump) Audit(r Record) { p.record(r) }

// dropHeld drops the held messages of a killed conversation as dead
// letters and tells the gate.
func (p *Pump) dropHeld(conv string, cause error) {
	hs := p.held.takeConv(conv)
	if len(hs) == 0 {
		return
	}
	g := p.deliveryGate()
	for _, h := range hs {
		p.dropHold(g, h, cause)
	}
}

// dropHold drops h, no longer held, as a dead letter and tells g (when
// there is one). The gate is told before the conversation may complete
// (convDone): what it announces about the hold (its approval expired)
// belongs to the conversation, and a transport stops routing the
// conversation's news to its clients at its completion.
func (p *Pump) dropHold(g DeliveryGate, h *heldDelivery, cause error) {
	d := h.d
	p.deadLetter(d.conv, d.thread, d.from, h.l.Name, d.payloadName, nil, p.dropReason(d.conv)+" while the message was held")
	if g != nil {
		g.Dropped(h.id, cause)
	}
	d.mark.release()
	p.convDone(d.conv)
}
