package pump

import (
	"errors"
	"fmt"
	"strings"

	"github.com/xml-pipeline/xmlpipe/registry"
)

// Control errors.
var (
	// ErrUnknownListener: no listener has that name.
	ErrUnknownListener = errors.New("unknown listener")
	// ErrUnknownThread: the thread is neither live nor has messages in flight.
	ErrUnknownThread = errors.New("unknown thread")
	// ErrConversationEnded: Kill found a conversation the organism knows
	// (its thread live for a continuation, its history kept, in the
	// journal, or among those that completed recently) with nothing in flight: it has completed, failed or been
	// killed already, nothing runs that a kill could stop, and Kill
	// leaves it as it is (its owner may still continue one that completed
	// or failed; one killed stays killed).
	ErrConversationEnded = errors.New("conversation already ended")
)

// Pause stops name's workers from taking new messages; messages keep queueing
// (new external messages until the listener holds its share of the
// admission budget, then they wait for room and are refused with ErrBusy;
// internal ones never block). A handler already running finishes. Shutdown
// still drains a paused listener. Pausing a paused listener is a no-op.
// Every version of name pauses: the current one and those a change
// replaced that still serve the conversations begun with them.
func (p *Pump) Pause(name string) error {
	return p.setPaused(name, true)
}

// Resume lets a paused listener's workers take messages again — every
// version of it, as Pause stops them all.
func (p *Pump) Resume(name string) error {
	return p.setPaused(name, false)
}

// setPaused pauses or resumes the current listener called name and every
// replaced version of it still serving pinned conversations, so a
// conversation begun before a reload is neither handled while its listener
// is paused nor stranded in a paused queue the next Resume cannot reach.
// It holds routesMu, as a change does while it copies a replaced
// listener's pause to its replacement: a pause or resume racing a reload
// then either reaches the old version before the copy or finds the new
// one published, never neither (the lost pause, the resume that left the
// new version paused for ever).
func (p *Pump) setPaused(name string, paused bool) error {
	p.routesMu.Lock()
	defer p.routesMu.Unlock()
	l := p.routes.Load().lookup(name)
	if l == nil {
		return fmt.Errorf("%w: %s", ErrUnknownListener, name)
	}
	changed := false
	for _, v := range p.versions(l) {
		if v.queue.setPaused(paused) {
			changed = true
		}
	}
	if !changed {
		return nil
	}
	msg := "listener paused"
	if !paused {
		msg = "listener resumed"
	}
	p.log.Info(msg, "listener", l.Name, "queued", l.queue.len())
	return nil
}

// versions returns cur and the live listeners a change replaced by it (same
// name, draining the conversations that pinned an older routing table).
func (p *Pump) versions(cur *listener) []*listener {
	out := []*listener{cur}
	for _, v := range p.liveListeners() {
		if v != cur && strings.EqualFold(v.Name, cur.Name) {
			out = append(out, v)
		}
	}
	return out
}

// Paused reports whether name is paused (false for unknown names).
func (p *Pump) Paused(name string) bool {
	l := p.routes.Load().lookup(name)
	return l != nil && l.queue.isPaused()
}

// Kill stops the conversation that thread belongs to (thread may be the
// conversation id or any thread of it): every thread of the conversation
// ends; the context of every handler call of it running now, on any of its
// threads, is cancelled with cause ErrConversationKilled, and what such a
// call returns afterwards is dropped (a dead letter, no <huh>: a handler
// that ignores the cancellation is abandoned after Options.CancelGrace);
// the messages of it still queued or emitted by handlers are dropped as dead
// letters ("conversation killed") instead of reaching a handler — those
// waiting in a listener's queue, a paused or halted one's included, or
// taken by a worker that waits for a global handler slot, leave it before
// Kill returns (marked delivered in the journal, no longer
// counted in the queue depth nor the admission budget); its
// messages held by the delivery gate are dropped, and the gate told
// (DeliveryGate.Dropped), before Kill returns — Kill waits for the gate's
// decisions about the conversation in progress, and the gate is not asked
// about its deliveries afterwards. The kill is final: before Kill returns
// it is remembered and, with a KillJournal, its record committed, so an
// outside message continuing the conversation is refused
// (ErrContinueKilled) and a durable organism's recovery runs none of its
// messages again, across halts, pauses, stops and crashes (a record that
// could not be committed is Kill's error, returned with the id after the
// kill took effect in memory). It returns
// the conversation id, or ErrUnknownThread when the thread is not live and
// no message of it is in flight and the organism never knew it (or has
// forgotten it: without a journal's thread history or a kept history, it
// remembers the last thousands of conversations that completed, and the
// last thousands of threads that ended with their conversation's root: a
// kill of an inner hop's ended thread is its conversation's, which it
// stops when it still runs — CheckThread resolves such a thread to its
// conversation's root likewise, so a transport lets only that
// conversation's owner name it). A
// conversation it knows with nothing in flight has ended, and one killed
// already has nothing more to stop: Kill changes nothing and returns its id
// with ErrConversationEnded (ending its thread would stop nothing: a
// continuation begins it again).
func (p *Pump) Kill(thread string) (string, error) {
	root := p.threads.Root(thread)
	conv, killedBefore := root, false
	if conv == "" {
		conv, killedBefore = p.endedConversation(thread)
		if r, ok := p.threads.EndedRoot(thread); ok && !killedBefore {
			// An ended thread of a conversation (an inner hop's, whose
			// handler ended or answered): the kill is its conversation's.
			root, conv = r, r
		}
	}
	s := p.convs.lock(conv)
	c := s.m[conv]
	again := c != nil && c.killed
	if c != nil && !c.killed {
		c.killed = true
		p.killing.Add(1)
	}
	s.mu.Unlock()
	if again || c == nil && killedBefore {
		// Killed already (its last messages still being dropped, or
		// gone): a second kill has nothing more to stop.
		return conv, fmt.Errorf("%w: %s (killed already)", ErrConversationEnded, conv)
	}
	if c == nil && (root != "" || p.knownConversation(conv)) {
		return conv, fmt.Errorf("%w: %s", ErrConversationEnded, conv)
	}
	if c != nil {
		// Before its threads end: a continuation that finds them ended
		// finds the kill too (refuseKilled), on any thread of it — the
		// ended one the kill named included.
		p.kills.add(conv, append(p.threads.Subtree(conv), thread))
	}
	err := p.threads.End(conv)
	if err != nil && !errors.Is(err, registry.ErrUnknownThread) {
		return "", fmt.Errorf("kill %s: %w", conv, err)
	}
	if c == nil && err != nil {
		return "", fmt.Errorf("%w: %s", ErrUnknownThread, thread)
	}
	recErr := p.recordKill(conv)
	cancelled, dropped := 0, 0
	if c != nil {
		// After the mark: a worker starting a call of conv now either sees
		// it (handle) or published its call before this scan.
		cancelled = p.cancelCalls(ErrConversationKilled, func(hc *handlerCall) bool { return hc.d.conv == conv })
		// A gate decision about conv in progress sees the mark and drops
		// its hold itself (gateStops); one that put its hold first leaves
		// it to dropHeld. Either way, every hold is dropped, and the gate
		// told (its approvals expired), when Kill returns.
		p.held.await(conv)
		p.dropHeld(conv, ErrConversationKilled)
		// Its messages waiting in the queues (at a paused or halted
		// listener, behind busy workers) leave them now: dead-lettered,
		// no longer counted as waiting nor holding room.
		dropped = p.purgeKilled(conv)
		// Those workers took from the queues and hold while they wait for
		// a handler slot leave their wait now, likewise.
		dropped += p.withdrawSlots(conv)
	}
	p.log.Warn("conversation killed", "thread", conv, "in_flight", c != nil, "cancelled", cancelled, "dropped", dropped)
	if recErr != nil {
		p.log.Error("conversation killed but the kill not recorded: a restart may run it again", "thread", conv,
			"error", recErr)
		return conv, recErr
	}
	return conv, nil
}

// endedConversation returns the conversation of thread, which is not live:
// the killed conversation it belonged to (killed true), else thread itself
// (taken for a conversation id).
func (p *Pump) endedConversation(thread string) (conv string, killed bool) {
	if conv, ok := p.kills.conversationOf(thread); ok {
		return conv, true
	}
	conv, killed, err := p.journalKilledThread(thread)
	if err != nil {
		p.log.Warn("kill: killed conversations lookup failed", "thread", thread, "error", err)
	}
	if !killed {
		return thread, false
	}
	return conv, true
}

// knownConversation reports whether thread, which is not live, was seen:
// the journal or the context buffer (a kept history) knows it, or it is a
// conversation that completed recently (remembered in memory, for a
// journal without thread history).
func (p *Pump) knownConversation(thread string) bool {
	if p.convs.endedRecently(thread) {
		return true
	}
	if h, ok := p.journal.(ThreadHistory); ok {
		_, seen, err := h.ThreadOrigin(thread)
		if err != nil {
			p.log.Warn("kill: thread history lookup failed", "thread", thread, "error", err)
		}
		if seen {
			return true
		}
	}
	_, kept := p.keptOrigin(thread)
	return kept
}

// killed reports whether conv was stopped by Kill, or its answer by Cancel,
// and still has messages in flight: they are dropped, not handled.
func (p *Pump) killed(conv string) bool {
	if conv == "" || p.killing.Load() == 0 {
		return false
	}
	s := p.convs.lock(conv)
	defer s.mu.Unlock()
	c := s.m[conv]
	return c != nil && c.stopped()
}
