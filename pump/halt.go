package pump

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

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

// haltedFor reports whether the current halt stops l: the organism's
// (Halt) or one of l alone (HaltListener).
func (p *Pump) haltedFor(l *listener) bool {
	if p.haltScope.Load().covers(l) {
		return true
	}
	if names := p.haltedNames.Load(); names != nil {
		_, ok := (*names)[strings.ToLower(l.Name)]
		return ok
	}
	return false
}

// senderHalted reports whether from names a listener halted alone
// (HaltListener): the messages it sent wait too, wherever they are queued,
// and their handlings running at its halt are cancelled.
func (p *Pump) senderHalted(from string) bool {
	names := p.haltedNames.Load()
	if names == nil {
		return false
	}
	_, ok := (*names)[strings.ToLower(from)]
	return ok
}

// HaltReport says what Halt did.
type HaltReport struct {
	// Scope is the scope now in force (0 after a HaltListener while no
	// organism halt is in force).
	Scope HaltScope
	// Listener is the listener HaltListener stopped ("" for Halt).
	Listener string
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
//
// The OnHaltChange hook is told of it once it is in force: an organism's
// governance records it (who, the event, kept across a restart) whether
// it came through organism.Governance or this method.
func (p *Pump) Halt(scope HaltScope) (HaltReport, error) {
	rep, err := p.halt(scope)
	if err == nil {
		p.haltChanged(HaltChange{Halted: true, Report: rep})
	}
	return rep, err
}

// halt is Halt without the hook.
func (p *Pump) halt(scope HaltScope) (HaltReport, error) {
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
	// Held is counted before the calls are cancelled: a cancelled call's
	// message goes back to its queue when its handler returns, which may
	// be before a later count.
	for _, l := range p.liveListeners() {
		if s.covers(l) {
			rep.Held += l.queue.len()
		}
	}
	rep.Cancelled = p.cancelCalls(ErrHalted, func(c *handlerCall) bool { return s.covers(c.l) && !c.l.WaitsOnConversations })
	p.log.Warn("organism halted", "scope", scope.String(), "cancelled", rep.Cancelled, "held", rep.Held)
	return rep, nil
}

// Unhalt lifts every halt — Halt's and every HaltListener's: the halted
// listeners take their queued messages again (the interrupted ones among
// them) in their scheduling order. It reports whether a halt was in force.
//
// The OnHaltChange hook is told of it once it is in force: an organism's
// governance records it (who, the event, kept across a restart) whether
// it came through organism.Governance or this method.
func (p *Pump) Unhalt() bool {
	if !p.unhalt() {
		return false
	}
	p.haltChanged(HaltChange{})
	return true
}

// unhalt is Unhalt without the hook.
func (p *Pump) unhalt() bool {
	p.haltMu.Lock()
	defer p.haltMu.Unlock()
	scope, names := p.haltScope.Swap(nil), p.haltedNames.Swap(nil)
	if scope == nil && names == nil {
		return false
	}
	for _, l := range p.liveListeners() {
		l.queue.setHalted(false)
		l.queue.unpark()
	}
	p.log.Warn("organism resumed after halt")
	return true
}

// HaltListener is Halt for the one listener called name (every version of
// it a reload left serving, and those added under that name until
// UnhaltListener or Unhalt): it stops taking messages — they queue,
// nothing is lost — and its handler calls running now are cancelled with
// cause ErrHalted, their messages going back to its queue to be handled
// again from the start after the halt is lifted, as Halt's are. The other
// listeners keep serving. An unknown name fails with ErrUnknownListener;
// ErrClosed once the pump shuts down. A halt of a listener already halted
// so is reported again, and cancels nothing new.
//
// The OnHaltChange hook is told of it once it is in force: an organism's
// governance records it (who, the event, kept across a restart) whether
// it came through organism.Governance or this method.
func (p *Pump) HaltListener(name string) (HaltReport, error) {
	rep, err := p.haltListener(name)
	if err == nil {
		p.haltChanged(HaltChange{Halted: true, Listener: rep.Listener, Report: rep})
	}
	return rep, err
}

// haltListener is HaltListener without the hook.
func (p *Pump) haltListener(name string) (HaltReport, error) {
	l := p.routes.Load().lookup(name)
	if l == nil {
		return HaltReport{}, fmt.Errorf("%w: %s", ErrUnknownListener, name)
	}
	p.haltMu.Lock()
	defer p.haltMu.Unlock()
	if p.closing.Load() {
		return HaltReport{}, ErrClosed
	}
	key := strings.ToLower(l.Name)
	names := map[string]string{}
	if cur := p.haltedNames.Load(); cur != nil {
		maps.Copy(names, *cur)
	}
	names[key] = l.Name
	p.haltedNames.Store(&names)
	rep := HaltReport{Listener: l.Name}
	if s := p.haltScope.Load(); s != nil {
		rep.Scope = *s
	}
	stops := func(v *listener) bool { return strings.EqualFold(v.Name, key) }
	for _, v := range p.liveListeners() {
		if stops(v) {
			v.queue.setHalted(true)
		}
	}
	// After the set is published: a worker starting a call now either sees
	// the halt (handle) or publishes its call before this scan.
	// Its calls to tools and peers running now stop too (a tool's process
	// with its context): their messages wait, as its own do.
	// Held is counted before the calls are cancelled (as in halt).
	for _, v := range p.liveListeners() {
		if stops(v) {
			rep.Held += v.queue.len()
		}
	}
	rep.Cancelled = p.cancelCalls(ErrHalted, func(c *handlerCall) bool {
		return (stops(c.l) || strings.EqualFold(c.d.from, key)) && !c.l.WaitsOnConversations
	})
	p.log.Warn("listener halted", "listener", l.Name, "cancelled", rep.Cancelled, "held", rep.Held)
	return rep, nil
}

// UnhaltListener lifts HaltListener's halt of the listener called name: it
// takes its queued messages again, unless Halt's scope still covers it. It
// reports whether that listener was halted so.
//
// The OnHaltChange hook is told of it once it is in force: an organism's
// governance records it (who, the event, kept across a restart) whether
// it came through organism.Governance or this method.
func (p *Pump) UnhaltListener(name string) bool {
	if !p.unhaltListener(name) {
		return false
	}
	p.haltChanged(HaltChange{Listener: name})
	return true
}

// unhaltListener is UnhaltListener without the hook.
func (p *Pump) unhaltListener(name string) bool {
	p.haltMu.Lock()
	defer p.haltMu.Unlock()
	cur := p.haltedNames.Load()
	key := strings.ToLower(name)
	if cur == nil {
		return false
	}
	if _, ok := (*cur)[key]; !ok {
		return false
	}
	names := maps.Clone(*cur)
	delete(names, key)
	if len(names) == 0 {
		p.haltedNames.Store(nil)
	} else {
		p.haltedNames.Store(&names)
	}
	for _, l := range p.liveListeners() {
		if strings.EqualFold(l.Name, key) && !p.haltScope.Load().covers(l) {
			l.queue.setHalted(false)
		}
		l.queue.unpark() // what it sent
	}
	p.log.Warn("listener resumed after halt", "listener", name)
	return true
}

// HaltedListeners returns the names HaltListener halted, sorted.
func (p *Pump) HaltedListeners() []string {
	cur := p.haltedNames.Load()
	if cur == nil {
		return nil
	}
	return slices.Sorted(maps.Values(*cur))
}

// Halted returns the scope of the halt in force (ok false: none).
func (p *Pump) Halted() (scope HaltScope, ok bool) {
	if s := p.haltScope.Load(); s != nil {
		return *s, true
	}
	return 0, false
}
