package pump

import "errors"

// HaltScope selects the listeners Halt stops.
type HaltScope uint8

// Halt scopes.
const (
	// HaltAgents stops the LLM agents (Listener.Agent) only: tools and the
	// other listeners keep serving.
	HaltAgents HaltScope = iota + 1
	// HaltAll stops every listener, the organism's own included.
	HaltAll
)

// ErrBadHaltScope: Halt was given a scope that is neither HaltAgents nor
// HaltAll.
var ErrBadHaltScope = errors.New("pump: unknown halt scope")

// String names the scope: "agents" or "all".
func (s HaltScope) String() string {
	switch s {
	case HaltAgents:
		return "agents"
	case HaltAll:
		return "all"
	}
	return "none"
}

// covers reports whether a halt of scope s (nil: no halt) stops l.
func (s *HaltScope) covers(l *listener) bool {
	return s != nil && (*s == HaltAll || *s == HaltAgents && l.Agent)
}

// haltedFor reports whether the current halt stops l.
func (p *Pump) haltedFor(l *listener) bool { return p.haltScope.Load().covers(l) }

// HaltReport says what Halt did.
type HaltReport struct {
	// Scope is the scope now in force.
	Scope HaltScope
	// Cancelled is how many running handler calls were cancelled.
	Cancelled int
	// Held is how many messages wait in the halted listeners' queues at
	// the halt. The messages of the Cancelled calls are not among them:
	// each goes back to its queue once its handler returns.
	Held int
}

// Halt is the emergency stop: the listeners of scope stop taking messages
// (like Pause, they keep queueing them: nothing is lost), and the context of
// every handler call of theirs running now is cancelled with cause
// ErrHalted. A call so cancelled produces nothing — whatever it returns is
// discarded — and its message goes back to its listener's queue, to be
// handled again from the start after Unhalt (the history it saw is not
// appended twice); unless its handler had settled it (xmlpipe.Settle): then
// what it returns is processed as ever. A handler that ignores the cancellation is abandoned
// after Options.CancelGrace (its slot and worker freed); a settled one's
// response is still processed when it returns, and its message is not
// handled again. It fails with ErrClosed once the pump shuts
// down. Listeners added while halted start halted
// when the scope covers them. A second Halt widens the scope (HaltAll
// after HaltAgents) and never narrows it. Pause state is separate: Unhalt
// does not resume a paused listener. A Shutdown lifts the halt to drain.
func (p *Pump) Halt(scope HaltScope) (HaltReport, error) {
	if scope != HaltAgents && scope != HaltAll {
		return HaltReport{}, ErrBadHaltScope
	}
	p.haltMu.Lock()
	defer p.haltMu.Unlock()
	if p.closing.Load() {
		return HaltReport{}, ErrClosed
	}
	if cur := p.haltScope.Load(); cur != nil && *cur > scope {
		scope = *cur
	}
	s := scope
	p.haltScope.Store(&s)
	rep := HaltReport{Scope: scope}
	for _, l := range p.liveListeners() {
		if s.covers(l) {
			l.queue.setHalted(true)
		}
	}
	// After the scope is published: a worker starting a call now either
	// sees the halt (handle) or publishes its call before this scan.
	rep.Cancelled = p.cancelCalls(ErrHalted, func(c *handlerCall) bool { return s.covers(c.l) && !c.l.WaitsOnConversations })
	for _, l := range p.liveListeners() {
		if s.covers(l) {
			rep.Held += l.queue.len()
		}
	}
	p.log.Warn("organism halted", "scope", scope.String(), "cancelled", rep.Cancelled, "held", rep.Held)
	return rep, nil
}

// Unhalt lifts Halt: the halted listeners take their queued messages again
// (the interrupted ones among them) in their scheduling order. It reports
// whether a halt was in force.
func (p *Pump) Unhalt() bool {
	p.haltMu.Lock()
	defer p.haltMu.Unlock()
	if p.haltScope.Swap(nil) == nil {
		return false
	}
	for _, l := range p.liveListeners() {
		l.queue.setHalted(false)
	}
	p.log.Warn("organism resumed after halt")
	return true
}

// Halted returns the scope of the halt in force (ok false: none).
func (p *Pump) Halted() (scope HaltScope, ok bool) {
	if s := p.haltScope.Load(); s != nil {
		return *s, true
	}
	return 0, false
}
