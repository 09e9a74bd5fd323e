package pump

import (
	"errors"
	"slices"
	"strings"
)

// ListenerChange is a set of listener edits that Change applies as one
// routing snapshot: a reload's diff.
type ListenerChange struct {
	// Remove names the listeners to take out.
	Remove []string
	// Add are the listeners to put in. One named like a listener of
	// Remove replaces it: new conversations reach the new one, running
	// ones keep the one they pinned.
	Add []Listener
	// SetProfiles makes the change also replace the profile definitions
	// (see Pump.SetProfiles) with Profiles (nil: none), in the same
	// routing snapshot: conversations begun after the change see the new
	// listeners and the new profiles together.
	SetProfiles bool
	Profiles    []ProfileDef
}

// ChangeError is a Change — or a Register, RegisterSystem or AddListener —
// that could not be applied because of one listener: the routing rules
// refused it (ErrDuplicateName, ErrTagCollision, ErrReservedName,
// ErrBadListener) or it does not exist (ErrUnknownListener). Nothing of the
// change was applied. Err never names the listener again: a caller that
// names it itself (at a file:line) wraps Err instead.
type ChangeError struct {
	// Listener is the listener's name.
	Listener string
	// Err is why.
	Err error
}

// Error names the listener and the cause.
func (e *ChangeError) Error() string { return "listener " + e.Listener + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *ChangeError) Unwrap() error { return e.Err }

// Change applies c at once, also while the pump runs: every conversation
// that starts from now on routes within the new table, while one already
// running keeps the table it started with (seed 000 §8.5) — a removed or
// replaced listener serves it until it completes. Listeners c does not name
// are left exactly as they are (their workers, queues and running handlers
// are not touched). It is all or nothing: when a listener of c breaks the
// registration rules (checked against the table as c leaves it, so a tag
// may pass from a removed listener to an added one), nothing changes and
// the error is a *ChangeError. A replaced listener that was paused starts
// paused. Agents among Add get their usage instructions from the new table.
//
// A listener removed without a replacement while paused is resumed: no
// name reaches it any more, so nothing else could resume it, and the
// conversations that pinned it would never complete.
//
// retired has, for every removed or replaced listener (by lower-cased
// name), a channel closed once no conversation can reach it any more and
// its handlers have returned — when what it holds (a module, a session)
// may be released.
func (p *Pump) Change(c ListenerChange) (retired map[string]<-chan struct{}, err error) {
	if p.closing.Load() {
		return nil, ErrClosed
	}
	if len(c.Remove) == 0 && len(c.Add) == 0 && !c.SetProfiles {
		return map[string]<-chan struct{}{}, nil
	}
	var profiles map[string]*profileDef
	if c.SetProfiles {
		if profiles, err = compileProfiles(c.Profiles); err != nil {
			return nil, err
		}
	}
	started := p.started.Load()
	added := make([]*listener, len(c.Add))
	for i, l := range c.Add {
		added[i] = p.newListener(l)
		added[i].current = make([]workerSlot, added[i].Workers)
	}
	if started {
		// The workers start before the snapshot holding them is published: a
		// message routed to a new listener then always finds them.
		for _, rl := range added {
			p.startWorkers(rl)
		}
	}
	var removed []*listener
	err = p.editRoutes(func(t *table) (*table, error) {
		nt, rm, err := t.changed(c.Remove, added)
		removed = rm
		if err == nil && c.SetProfiles {
			if nt == t {
				nt = t.copyWith(func(*listener) bool { return true }, nil)
			}
			nt.profiles, nt.profileSrc = profiles, slices.Clone(c.Profiles)
		}
		return nt, err
	})
	if err != nil {
		if started {
			for _, rl := range added {
				p.retireListener(rl) // never reachable: their idle workers stop
			}
		}
		return nil, err
	}
	if p.closing.Load() {
		for _, rl := range added {
			rl.queue.close() // Shutdown began meanwhile and may have missed them
		}
	}
	retired = make(map[string]<-chan struct{}, len(removed))
	for _, l := range removed {
		if p.routes.Load().lookup(l.Name) == nil { // removed, not replaced
			p.resumeRemoved(l)
		}
		done := make(chan struct{})
		go func() {
			l.workers.Wait()
			close(done)
		}()
		retired[lower(l.Name)] = done
	}
	p.log.Info("listeners changed", "removed", c.Remove, "added", names(added))
	return retired, nil
}

// names returns the names of ls.
func names(ls []*listener) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.Name
	}
	return out
}

// changed returns a new snapshot holding t's listeners but those named in
// remove, plus add (checked with the registration rules), and the removed
// listeners. A paused listener's replacement is paused too; agents among
// add get their usage instructions from the new snapshot.
func (t *table) changed(remove []string, add []*listener) (*table, []*listener, error) {
	cur := t
	var between []*table // intermediate snapshots, never published
	release := func() {
		for _, b := range between {
			b.drop()
		}
	}
	var removed []*listener
	for _, name := range remove {
		nt, l, err := cur.without(name)
		if err != nil {
			release()
			if errors.Is(err, ErrUnknownListener) {
				err = ErrUnknownListener // its message named it
			}
			return nil, nil, &ChangeError{Listener: name, Err: err}
		}
		if cur != t {
			between = append(between, cur)
		}
		cur = nt
		removed = append(removed, l)
	}
	for _, l := range add {
		nt, err := cur.with(l, false)
		if err != nil {
			if cur != t {
				between = append(between, cur)
			}
			release()
			if !errors.As(err, new(*ChangeError)) {
				err = &ChangeError{Listener: l.Name, Err: err}
			}
			return nil, nil, err
		}
		if cur != t {
			between = append(between, cur)
		}
		cur = nt
	}
	release()
	for _, l := range add {
		for _, old := range removed {
			if strings.EqualFold(old.Name, l.Name) && old.queue.isPaused() {
				l.queue.setPaused(true)
			}
		}
		cur.buildUsage(l)
	}
	return cur, removed, nil
}

// drop forgets an intermediate snapshot that was never published: the
// listeners it holds stop counting it. They are all held by the snapshot
// that replaces it, so none is retired here.
func (t *table) drop() {
	for _, l := range t.order {
		l.tables.Add(-1)
	}
}

// buildUsage gives an agent with peers its usage instructions from the
// peers this snapshot holds.
func (t *table) buildUsage(l *listener) {
	ps := l.peerset.Load()
	if !l.Agent || len(ps.names) == 0 {
		return
	}
	l.peerset.Store(agentPeerSet(l, t, ps.names))
}
