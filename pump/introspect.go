package pump

import "time"

// ListenerInfo describes a registered listener for consoles and APIs.
type ListenerInfo struct {
	Name        string
	Description string
	Agent       bool
	Broadcast   bool
	Peers       []string
	// RootTag is the payload root element ({ns}name when namespaced).
	RootTag string
	// QueueDepth is how many messages wait in the listener's pipeline —
	// queued, or taken by a worker that waits for a global handler slot —
	// also in those of the versions a change replaced that still serve the
	// conversations begun with them.
	QueueDepth int
	// Active is how many messages the handler is working on now (its
	// replaced versions' included).
	Active int
	// Handled counts messages handled since start.
	Handled int64
	// Paused reports a listener stopped by Pause.
	Paused bool
	// Halted reports a listener stopped by Halt (see Pump.Halt).
	Halted bool
	// Timeout is the deadline of one handler call (0: none).
	Timeout time.Duration
	// SlotsHeld is how many of the global handler slots the listener's
	// handlers hold now.
	SlotsHeld int
	// Lingering is how many of its handler calls were abandoned (see
	// Options.CancelGrace) and have not returned yet.
	Lingering int
	// Current lists the threads the listener's handlers (its replaced
	// versions' included) are working on now.
	Current []string
	// LastError is the listener's most recent handler error or panic (""
	// if none), at LastErrorTime.
	LastError     string
	LastErrorTime time.Time
	// LastErrorThread is the thread of the message whose handling failed
	// with LastError, LastErrorProfile that thread's profile ("" for none).
	LastErrorThread, LastErrorProfile string
	// Failing reports that the listener's last finished handling failed
	// (with LastError) and none has finished since.
	Failing bool
	// LastActivity is when the last message finished (zero if none).
	LastActivity time.Time
}

// Listeners describes every listener in registration order (system ones
// first). A listener a change (a reload) replaced while conversations still
// use it counts in the entry of its current version: its queued and running
// messages are part of the work done under that name.
func (p *Pump) Listeners() []ListenerInfo {
	ls := p.routes.Load().all()
	current := make(map[*listener]bool, len(ls))
	for _, l := range ls {
		current[l] = true
	}
	var draining map[string][]*listener
	for _, l := range p.liveListeners() {
		if !current[l] {
			if draining == nil {
				draining = map[string][]*listener{}
			}
			draining[lower(l.Name)] = append(draining[lower(l.Name)], l)
		}
	}
	out := make([]ListenerInfo, 0, len(ls))
	for _, l := range ls {
		info := ListenerInfo{
			Name: l.Name, Description: l.Description, Agent: l.Agent, Broadcast: l.Broadcast,
			Peers:      append([]string(nil), l.peerset.Load().names...),
			RootTag:    tagKey{l.Payload.Namespace(), l.Payload.Name()}.String(),
			QueueDepth: l.queue.len() + p.slots.waiting(l), Active: int(l.active.Load()), Handled: l.handled.Load(),
			Paused: l.queue.isPaused(), Halted: l.queue.isHalted(), Timeout: l.timeout, SlotsHeld: p.slots.held(l),
			Lingering: int(l.lingering.Load()),
		}
		for _, v := range append([]*listener{l}, draining[lower(l.Name)]...) {
			if v != l {
				info.QueueDepth += v.queue.len() + p.slots.waiting(v)
				info.Active += int(v.active.Load())
			}
			for _, c := range v.runningCalls(nil) {
				info.Current = append(info.Current, c.d.thread)
			}
		}
		if e := l.lastError.Load(); e != nil {
			info.LastError, info.LastErrorTime = e.msg, e.at
			info.LastErrorThread, info.LastErrorProfile = e.thread, e.profile
			info.Failing = info.Handled <= e.handled
		}
		if ns := l.lastSeen.Load(); ns != 0 {
			info.LastActivity = time.Unix(0, ns)
		}
		out = append(out, info)
	}
	return out
}
