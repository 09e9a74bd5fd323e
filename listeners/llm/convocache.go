package llm

import (
	"container/list"
	"math"
	"sync"

	"github.com/xml-pipeline/xmlpipe/registry"
)

// A long conversation is read at every handling of one of its messages.
// Reading it all again each time made a turn cost in proportion to the
// whole conversation, however little of it the model is sent: a
// conversation of n turns cost O(n²). So each agent keeps the convo of its
// latest conversations between handlings and reads only the slots
// appended since (convoCache). A kept convo is used only while it is
// exactly the history's slots 0…next-1, in order: its thread's history is
// the same (not deleted and begun again), nothing was appended to it by
// anyone else while a handling recorded its own slots (a message that
// arrived meanwhile would be out of order), and the caller is the same;
// else the history is read whole, as before.

// convoCacheSize bounds the conversations whose convo an agent keeps
// between handlings (least recently handled ones give way).
const convoCacheSize = 64

// convoCache holds the convos of an agent's latest conversations, by
// session thread. A convo is taken out while a handling uses it and put
// back when the handling ends, so no two handlings ever share one.
type convoCache struct {
	mu    sync.Mutex
	m     map[string]*list.Element // of *cachedConvo
	order list.List                // most recently kept first
}

// cachedConvo is a kept convo and its session thread.
type cachedConvo struct {
	session string
	c       *convo
}

// take removes and returns session's convo (nil when none is kept).
func (cc *convoCache) take(session string) *convo {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	e := cc.m[session]
	if e == nil {
		return nil
	}
	delete(cc.m, session)
	cc.order.Remove(e)
	return e.Value.(*cachedConvo).c
}

// keep puts session's convo back (the most recently kept).
func (cc *convoCache) keep(session string, c *convo) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.m == nil {
		cc.m = map[string]*list.Element{}
	}
	if e := cc.m[session]; e != nil {
		cc.order.Remove(e)
	}
	cc.m[session] = cc.order.PushFront(&cachedConvo{session: session, c: c})
	for cc.order.Len() > convoCacheSize {
		old := cc.order.Back()
		cc.order.Remove(old)
		delete(cc.m, old.Value.(*cachedConvo).session)
	}
}

// convoOf returns the conversation on session (one thread) as the loop
// reads it, whose caller is caller, and how many of the thread's slots it
// holds: the kept convo with the slots appended since, else the history
// read whole.
func (a *Agent) convoOf(session, caller string) (*convo, int) {
	tc, ok := a.History.Thread(session)
	if !ok {
		c := a.readConvo(nil, caller)
		return c, 0
	}
	if c := a.convos.take(session); c != nil && c.tc == tc && c.caller == caller && !c.diverged {
		fresh := tc.Slice(c.next, math.MaxInt)
		for i := range fresh {
			c.add(a, &fresh[i])
		}
		c.next += len(fresh)
		return c, c.next
	}
	slots := tc.Slots()
	c := a.readConvo(slots, caller)
	c.tc, c.next = tc, len(slots)
	return c, c.next
}

// keepConvo keeps c, the convo of session a handling read with convoOf,
// for the next handling — unless it no longer is the history's slots in
// order (see convoCache).
func (a *Agent) keepConvo(session string, c *convo) {
	if c.tc == nil || c.diverged {
		return
	}
	a.convos.keep(session, c)
}

// recorded notes that the agent appended slot s to the history its convo
// c holds (err: it could not): c stays the history's slots in order only
// when s took the next index.
func (c *convo) recorded(s registry.Slot, err error) {
	if c.tc == nil {
		return
	}
	if err != nil || s.Index != c.next {
		c.diverged = true
		return
	}
	c.next++
}
