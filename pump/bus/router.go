package bus

import (
	"sync"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// sink receives the events of the conversations a socket started, and
// what their listeners print or their agents stream (organism.Output of
// kind print or delta). Both methods are called from the organism's
// goroutines and must not block.
type sink interface {
	conversationEvent(e pump.Event)
	output(o organism.Output)
}

// maxOrphans bounds the events kept for a conversation whose id is not known
// yet (see router.lateBegin).
const maxOrphans = 1024

// router delivers each event of a conversation to the sockets that started
// or continued it. A socket claims a conversation before injecting into it
// (it knows the id); a route is dropped when the conversation completes with
// no inject pending, or when its socket goes away.
type router struct {
	mu     sync.Mutex
	routes map[string]*route
	bySink map[sink]map[string]struct{}
	// late counts injects whose conversation id is only known afterwards
	// (a frame with an invalid thread id); while any is pending, events of
	// unclaimed conversations are kept in orphans, bounded.
	late    int
	orphans []routed
	// free are dropped routes kept for the next conversations (a route a
	// conversation, created and dropped at the pace of conversations).
	free []*route
}

// maxFreeRoutes bounds the dropped routes router.free keeps.
const maxFreeRoutes = 256

// route is one conversation's sockets.
type route struct {
	// sinks holds the sockets, in one's storage while there is one (a
	// conversation usually has one socket).
	sinks   []sink
	one     [1]sink
	pending int  // injects in progress
	active  bool // an event was routed
	// completed: the last event was the conversation's completion (a
	// message event clears it); the route goes when no inject is pending.
	completed bool
}

// routed is an event, or a printed line or streamed text, of a conversation.
type routed struct {
	conv  string
	event *pump.Event
	out   *organism.Output
}

func newRouter() *router {
	return &router{routes: map[string]*route{}, bySink: map[sink]map[string]struct{}{}}
}

// claim routes conv's events to s from now on; an inject into conv is
// pending until settle.
func (r *router) claim(conv string, s sink) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rt := r.add(conv, s)
	rt.pending++
}

// add routes conv to s (r.mu held).
func (r *router) add(conv string, s sink) *route {
	rt := r.routes[conv]
	if rt == nil {
		rt = r.newRoute()
		r.routes[conv] = rt
	}
	found := false
	for _, x := range rt.sinks {
		if x == s {
			found = true
			break
		}
	}
	if !found {
		rt.sinks = append(rt.sinks, s)
		set := r.bySink[s]
		if set == nil {
			set = map[string]struct{}{}
			r.bySink[s] = set
		}
		set[conv] = struct{}{}
	}
	return rt
}

// newRoute returns an empty route, a dropped one when there is one (r.mu
// held).
func (r *router) newRoute() *route {
	if n := len(r.free); n > 0 {
		rt := r.free[n-1]
		r.free[n-1] = nil
		r.free = r.free[:n-1]
		return rt
	}
	rt := &route{}
	rt.sinks = rt.one[:0]
	return rt
}

// settle ends a pending inject into conv. A conversation that never started
// (the message was refused at ingress), or that completed while the inject
// was pending, is forgotten.
func (r *router) settle(conv string, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rt := r.routes[conv]
	if rt == nil {
		return
	}
	rt.pending--
	if rt.pending == 0 && (rt.completed || !ok && !rt.active) {
		r.drop(conv, rt)
	}
}

// lateBegin announces an inject whose conversation id is learnt only when
// it returns; lateEnd(conv, s) then routes conv to s, replaying what arrived
// meanwhile ("" when the message was refused).
func (r *router) lateBegin() {
	r.mu.Lock()
	r.late++
	r.mu.Unlock()
}

// lateEnd: see lateBegin.
func (r *router) lateEnd(conv string, s sink) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.late--
	if conv != "" {
		rt := r.add(conv, s)
		rt.active = true
		kept := r.orphans[:0]
		completed := false
		for _, o := range r.orphans {
			if o.conv != conv {
				kept = append(kept, o)
				continue
			}
			if o.event != nil {
				s.conversationEvent(*o.event)
				completed = completed || o.event.Kind == pump.EventComplete
			} else {
				s.output(*o.out)
			}
		}
		r.orphans = kept
		if completed && rt.pending == 0 {
			r.drop(conv, rt)
		}
	}
	if r.late == 0 {
		r.orphans = nil
	}
}

// forget removes every route of s (its socket closed).
func (r *router) forget(s sink) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for conv := range r.bySink[s] {
		rt := r.routes[conv]
		if rt == nil {
			continue
		}
		for i, x := range rt.sinks {
			if x == s {
				rt.sinks = append(rt.sinks[:i], rt.sinks[i+1:]...)
				break
			}
		}
		if len(rt.sinks) == 0 {
			delete(r.routes, conv)
			r.recycle(rt)
		}
	}
	delete(r.bySink, s)
}

// drop deletes conv's route (r.mu held).
func (r *router) drop(conv string, rt *route) {
	delete(r.routes, conv)
	for _, s := range rt.sinks {
		// An emptied set stays for the socket's next conversation (forget
		// removes it with the socket): one map per socket, not one per
		// conversation.
		delete(r.bySink[s], conv)
	}
	r.recycle(rt)
}

// recycle keeps a route no conversation uses any more for newRoute (r.mu
// held): emptied, its sinks back in its own storage.
func (r *router) recycle(rt *route) {
	if len(r.free) >= maxFreeRoutes {
		return
	}
	clear(rt.sinks)
	*rt = route{}
	rt.sinks = rt.one[:0]
	r.free = append(r.free, rt)
}

// orphan is a routed item keeping copies of the event or output the
// router was handed (the caller's stays on its stack).
func orphan(conv string, ev *pump.Event, out *organism.Output) routed {
	o := routed{conv: conv}
	if ev != nil {
		e := *ev
		o.event = &e
	}
	if out != nil {
		c := *out
		o.out = &c
	}
	return o
}

// maxStackSinks is how many sinks event and output gather on their stack
// (a conversation usually has one socket).
const maxStackSinks = 4

// targets appends the sinks of conv to dst, keeping (a copy of) the event
// ev or output out as an orphan when conv is unclaimed and a late inject is
// pending; a completion with no inject pending drops the route.
func (r *router) targets(dst []sink, conv string, ev *pump.Event, out *organism.Output) []sink {
	if conv == "" {
		return dst
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	rt := r.routes[conv]
	if rt == nil {
		// Streamed text is not kept: only /bus injects are late, and /bus
		// has no use for it (nor should it crowd out the events kept).
		if r.late > 0 && len(r.orphans) < maxOrphans && (out == nil || out.Kind != organism.OutputDelta) {
			r.orphans = append(r.orphans, orphan(conv, ev, out))
		}
		return dst
	}
	rt.active = true
	sinks := append(dst, rt.sinks...)
	if ev != nil {
		switch ev.Kind {
		case pump.EventMessage:
			rt.completed = false
		case pump.EventComplete:
			if ev.Waiting > 0 {
				break // a continuation waits for its turn: its events come
			}
			rt.completed = true
			if rt.pending == 0 {
				r.drop(conv, rt)
			}
		}
	}
	return sinks
}

// event routes a pump event. Delivery happens inside the pump's publish call,
// so the events of one conversation keep their causal order.
func (r *router) event(e pump.Event) {
	var buf [maxStackSinks]sink
	for _, s := range r.targets(buf[:0], e.Conversation, &e, nil) {
		s.conversationEvent(e)
	}
}

// output routes a line a listener printed or a piece of text an agent
// streamed.
func (r *router) output(o organism.Output) {
	var buf [maxStackSinks]sink
	for _, s := range r.targets(buf[:0], o.Conversation, nil, &o) {
		s.output(o)
	}
}

// routed reports whether conv's events go to s.
func (r *router) routed(conv string, s sink) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.bySink[s][conv]
	return ok
}

// size reports how many conversations are routed (tests).
func (r *router) size() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.routes)
}
