package aeiou

import (
	"container/list"
	"sync"
	"time"
)

// Replay cache defaults (§11.3).
const (
	DefaultReplayTTL      = 5 * time.Minute
	DefaultReplayCapacity = 4096
)

// ReplayCache remembers the jtis honoured per session (§6.5, §11.3). Each
// session's cache is bounded by a TTL (an entry is forgotten that long
// after it was added) and a capacity (the least recently used entry — added
// or looked up — is evicted first). Sessions whose entries have all expired
// are dropped by a sweep that runs at most once per TTL, so memory follows
// the live sessions.
//
// Eviction before a token expires cannot reopen a replay: a token verifies
// only for its own {session_id, turn_index, turn_nonce}, and the nonce
// changes every turn; the cache guards the window inside one turn. With the
// default Config the cache TTL (5 min) also covers the longest token TTL.
//
// It is safe for concurrent use.
type ReplayCache struct {
	ttl       time.Duration
	capacity  int
	mu        sync.Mutex
	sessions  map[string]*sessionCache
	lastSweep time.Time
}

type sessionCache struct {
	order *list.List // front: most recently used; values are *replayEntry
	byJTI map[string]*list.Element
}

type replayEntry struct {
	jti     string
	expires time.Time
}

// NewReplayCache returns a cache with the given TTL and per-session capacity
// (0 or less: the defaults, 5 min and 4096).
func NewReplayCache(ttl time.Duration, capacity int) *ReplayCache {
	if ttl <= 0 {
		ttl = DefaultReplayTTL
	}
	if capacity <= 0 {
		capacity = DefaultReplayCapacity
	}
	return &ReplayCache{ttl: ttl, capacity: capacity, sessions: map[string]*sessionCache{}}
}

// Add records jti for session sid at now. It returns false, recording
// nothing new, when the jti is already there and unexpired (a replay).
func (c *ReplayCache) Add(sid, jti string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.maybeSweep(now)
	s := c.sessions[sid]
	if s == nil {
		s = &sessionCache{order: list.New(), byJTI: map[string]*list.Element{}}
		c.sessions[sid] = s
	}
	s.expire(now)
	if el, ok := s.byJTI[jti]; ok {
		if now.After(el.Value.(*replayEntry).expires) {
			s.remove(el)
		} else {
			s.order.MoveToFront(el)
			return false
		}
	}
	for s.order.Len() >= c.capacity {
		s.remove(s.order.Back())
	}
	s.byJTI[jti] = s.order.PushFront(&replayEntry{jti: jti, expires: now.Add(c.ttl)})
	return true
}

// Seen reports whether jti is recorded, unexpired, for sid at now (a lookup
// counts as a use for the LRU order).
func (c *ReplayCache) Seen(sid, jti string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions[sid]
	if s == nil {
		return false
	}
	el, ok := s.byJTI[jti]
	if !ok {
		return false
	}
	if now.After(el.Value.(*replayEntry).expires) {
		s.remove(el)
		return false
	}
	s.order.MoveToFront(el)
	return true
}

// Forget drops session sid's cache (the conversation is over).
func (c *ReplayCache) Forget(sid string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.sessions, sid)
}

// Len returns the number of entries held for sid and the number of sessions
// held.
func (c *ReplayCache) Len(sid string) (entries, sessions int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.sessions[sid]; s != nil {
		entries = s.order.Len()
	}
	return entries, len(c.sessions)
}

// maybeSweep drops expired entries everywhere, and empty sessions, once per
// TTL. Called with c.mu held.
func (c *ReplayCache) maybeSweep(now time.Time) {
	if now.Sub(c.lastSweep) < c.ttl {
		return
	}
	c.lastSweep = now
	for sid, s := range c.sessions {
		s.expireAll(now)
		if s.order.Len() == 0 {
			delete(c.sessions, sid)
		}
	}
}

// expire drops expired entries from the LRU end (cheap; exact enough, since
// expireAll runs once per TTL and lookups check expiry themselves).
func (s *sessionCache) expire(now time.Time) {
	for el := s.order.Back(); el != nil && now.After(el.Value.(*replayEntry).expires); el = s.order.Back() {
		s.remove(el)
	}
}

func (s *sessionCache) expireAll(now time.Time) {
	for el := s.order.Back(); el != nil; {
		prev := el.Prev()
		if now.After(el.Value.(*replayEntry).expires) {
			s.remove(el)
		}
		el = prev
	}
}

func (s *sessionCache) remove(el *list.Element) {
	delete(s.byJTI, el.Value.(*replayEntry).jti)
	s.order.Remove(el)
}
