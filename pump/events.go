package pump

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// EventKind classifies what happened to a message.
type EventKind string

// Event kinds.
const (
	// EventMessage: an envelope was accepted and delivered to a listener.
	EventMessage EventKind = "message"
	// EventReply: an envelope was addressed to an external party (the outlet of
	// its conversation), e.g. a .respond() that pruned back to the console.
	EventReply EventKind = "reply"
	// EventHuh: a message failed; Huh carries the canned text.
	EventHuh EventKind = "huh"
	// EventSystemError: a SystemError was sent to an agent.
	EventSystemError EventKind = "system-error"
	// EventComplete: a conversation has no message in flight any more. Its
	// Error is KilledReason when Kill stopped it ("" otherwise).
	EventComplete EventKind = "complete"
	// EventDeadLetter: a message could not be delivered anywhere (logged,
	// journaled).
	EventDeadLetter EventKind = "dead-letter"
	// EventRefusal: a structured refusal was sent to a listener (Payload is
	// the *xmlpipe.Refusal, Error its summary, Listener the listener the
	// refused message was for). An outside sender's refusal is an
	// EventReply whose Payload is the *xmlpipe.Refusal.
	EventRefusal EventKind = "refusal"
)

// Event is one observable step of a conversation. Payload and Envelope are
// canonical bytes; handlers never see events (only transports, consoles and
// operators do).
type Event struct {
	Kind         EventKind
	Time         time.Time
	Conversation string
	Thread       string
	From, To     string
	// Listener is the receiving listener (EventMessage).
	Listener string
	// PayloadName is the payload root tag.
	PayloadName string
	// Payload is the decoded payload value (EventMessage, EventReply), for
	// in-process consumers; nil otherwise.
	Payload any
	// Envelope is the canonical envelope bytes.
	Envelope []byte
	// Error is the canned <huh> text (EventHuh), a dead-letter reason, or
	// why a conversation ended early (EventComplete: KilledReason).
	Error string
	// Diagnostics are the detailed findings (operators only).
	Diagnostics []string
	// Cause is the error behind a failure (EventHuh, EventSystemError,
	// EventDeadLetter when the pump has an error behind it), for
	// in-process consumers to test with errors.Is (ErrHandlerTimeout,
	// ErrChainTooDeep, …) where Error keeps the canned text the wire
	// carries; nil when the pump has no error behind it.
	Cause error
	// Profile is the security profile of the thread the event is about
	// (registry's name: one profile or several joined by "&"); "" for none
	// — or, when the organism defines profiles, for a thread no longer
	// live whose profile was not known when the event was published. A
	// transport shows a user with a profile only the events of threads of
	// that profile or a narrower one.
	Profile string
	// Turn identifies the turn of the conversation an event without an
	// envelope of its own belongs to (EventComplete, a failure told without
	// one): the journal seq of the outside message that began it (negative
	// when it was not journaled; 0 unknown). A continued thread's every turn
	// has its own, and a turn re-handled after a crash keeps it, so a
	// transport's frame ids (the bus's message_id) tell turns apart while a
	// repeated event keeps its id.
	Turn int64
	// About tells apart the failures of one turn told without an envelope
	// of their own (EventSystemError, EventHuh about a listener's output):
	// the correlation ref of the message the failure is about
	// ("ref:call_1"), else where that message came from — the journal seq
	// of the message whose handling produced it and its place among that
	// handling's outputs ("17#2"; the seq is negative when the message was
	// not journaled). Two identical violations of one reply have their
	// own, and a turn re-handled after a crash, producing the same output,
	// gives the same ones. "" when unknown.
	About string
	// ChainTooDeep marks the <huh> (EventHuh) that tells a conversation's
	// outside party it was stopped because its chain of forwards exceeded
	// the hop limit (ErrChainTooDeep) — here, or at a peer organism a call
	// of it reached (TooDeepError). A federation gateway passes it on to
	// the peer that called, whose conversation stops likewise.
	ChainTooDeep bool
	// Waiting is, on an EventComplete, how many continuations of the
	// conversation sent while this turn was in flight still wait for their
	// turns, each of which ends with an EventComplete of its own (turns.go):
	// a transport keeps routing the conversation's events until one says 0.
	Waiting int
}

// Outlet receives the events of the conversations an external party started.
// Deliver must not block for long: transports keep their own bounded queue.
type Outlet interface {
	Deliver(Event)
}

// OutletFunc adapts a function to Outlet.
type OutletFunc func(Event)

// Deliver calls f.
func (f OutletFunc) Deliver(e Event) { f(e) }

// subscribers fans events out to observers (consoles, monitors, the bus).
// They are a slice, in the order they were added: publish runs for every
// event, twice (watchers and subscribers), and ranging over a map of one or
// two entries cost it more than the outlets it called.
type subscribers struct {
	mu   sync.RWMutex
	next int
	subs []subscriber
	// n is len(subs) and all the number of them taking every kind, read
	// without the lock (publish skips the durability gate when nobody
	// takes an event).
	n, all atomic.Int32
}

// subscriber is an observer and the kinds of events it takes (nil: all).
type subscriber struct {
	id    int
	o     Outlet
	kinds map[EventKind]bool
}

func (s *subscribers) add(o Outlet, kinds ...EventKind) func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.next
	s.next++
	sub := subscriber{id: id, o: o}
	if len(kinds) > 0 {
		sub.kinds = make(map[EventKind]bool, len(kinds))
		for _, k := range kinds {
			sub.kinds[k] = true
		}
	}
	s.subs = append(s.subs, sub)
	s.n.Store(int32(len(s.subs)))
	if sub.kinds == nil {
		s.all.Add(1)
	}
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, cur := range s.subs {
			if cur.id != id {
				continue
			}
			s.subs = slices.Delete(s.subs, i, i+1)
			if cur.kinds == nil {
				s.all.Add(-1)
			}
			break
		}
		s.n.Store(int32(len(s.subs)))
	}
}

func (s *subscribers) publish(e Event) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for i := range s.subs {
		if sub := &s.subs[i]; sub.kinds == nil || sub.kinds[e.Kind] {
			sub.o.Deliver(e)
		}
	}
}

// wants reports whether a subscriber takes events of kind k.
func (s *subscribers) wants(k EventKind) bool {
	if s.all.Load() > 0 {
		return true
	}
	if s.n.Load() == 0 {
		return false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for i := range s.subs {
		if sub := &s.subs[i]; sub.kinds == nil || sub.kinds[k] {
			return true
		}
	}
	return false
}

// publish hands ev to out (when set) and to the subscribers: at once, or,
// with a DurableJournal, once everything journaled before the call is
// committed, in the order of the publish calls.
func (p *Pump) publish(out Outlet, ev Event) {
	if p.watchers.n.Load() > 0 {
		p.watchers.publish(ev)
	}
	if out == nil && !p.subs.wants(ev.Kind) {
		// Nobody takes it: it does not wait for (nor hurry) a commit.
		return
	}
	if ev.Profile == "" && ev.Thread != "" {
		ev.Profile = p.liveProfile(ev.Thread)
	}
	if ev.Turn == 0 && len(ev.Envelope) == 0 && ev.Conversation != "" {
		ev.Turn = p.turnOf(ev.Conversation)
	}
	if p.gate == nil {
		p.deliverEvent(out, ev)
		return
	}
	p.publishDurable(out, ev)
}

// publishDurable hands ev to the durability gate, which holds it by value
// in its reused queue: no allocation per event (a closure keeping the event
// was one of ~290 bytes, about 8 per bus reply).
func (p *Pump) publishDurable(out Outlet, ev Event) {
	p.gate.After(p.durable.Assigned(), held{out: out, ev: ev})
}

// held is what the durability gate holds: an event for out and the
// subscribers, or (fn set) a callback of AfterDurable.
type held struct {
	out Outlet
	ev  Event
	fn  func()
}

// deliverHeld hands over what the durability gate let through.
func (p *Pump) deliverHeld(h held) {
	if h.fn != nil {
		h.fn()
		return
	}
	p.deliverEvent(h.out, h.ev)
}

// deliverEvent hands ev to out (when set) and to the subscribers.
func (p *Pump) deliverEvent(out Outlet, ev Event) {
	if out != nil {
		out.Deliver(ev)
	}
	p.subs.publish(ev)
}

// Watch adds an observer that sees every event at once, in the order the
// pump accepts the messages, before the durability gate that Subscribe's
// observers wait behind. It is for in-process bookkeeping that must follow
// the pump as it goes (numbering a thread's messages the way its context
// buffer will); anything it learns reaches a client only through a
// subscriber's event. The returned function removes the watcher.
func (p *Pump) Watch(o Outlet) (cancel func()) { return p.watchers.add(o) }

// AfterDurable runs fn once everything journaled so far is committed, in
// order with the pump's events (at once without a DurableJournal). A
// transport uses it for what a handler says outside any envelope, such as a
// printed line, so a client never hears of work a crash could undo.
func (p *Pump) AfterDurable(fn func()) {
	if p.gate == nil {
		fn()
		return
	}
	p.gate.After(p.durable.Assigned(), held{fn: fn})
}

// liveProfile is the profile of live thread id when the organism defines
// profiles ("" otherwise, or when id is not live): what Event.Profile says
// of an event whose emitter did not know it.
func (p *Pump) liveProfile(id string) string {
	if !p.routes.Load().profiled() {
		return ""
	}
	prof, _ := p.threads.Profile(id)
	return prof
}
