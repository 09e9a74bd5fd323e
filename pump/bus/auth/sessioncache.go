package auth

import (
	"sync"
	"time"
)

// sessionCacheTTL bounds how long a session read from the store is answered
// from memory. The Service is the only writer of its users and sessions and
// drops what it changes at once (logout, password or TOTP reset, role
// change, removal), so the bound only matters to a store changed behind its
// back.
const sessionCacheTTL = 30 * time.Second

// maxCachedSessions bounds the cache; a full cache starts over.
const maxCachedSessions = 4096

// cachedSession is a session as the store last said, by token hash.
type cachedSession struct {
	user    string
	role    Role
	profile string
	expires time.Time
	fetched time.Time
}

// sessionCache answers Session for a token seen recently without reading
// the store: a REST request or a socket's periodic check costs a map lookup
// instead of two SQLite reads. gen counts invalidations, so a store read
// that raced one is not cached.
type sessionCache struct {
	mu  sync.Mutex
	m   map[string]cachedSession
	gen uint64
}

// get returns the cached session of hash when it was read less than
// sessionCacheTTL before now.
func (c *sessionCache) get(hash string, now time.Time) (cachedSession, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[hash]
	if !ok {
		return cachedSession{}, false
	}
	if now.Sub(e.fetched) >= sessionCacheTTL || now.Before(e.fetched) {
		delete(c.m, hash)
		return cachedSession{}, false
	}
	return e, true
}

// generation is the invalidation count, taken before a store read.
func (c *sessionCache) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// put caches e under hash unless something was invalidated since gen.
func (c *sessionCache) put(hash string, e cachedSession, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	if c.m == nil || len(c.m) >= maxCachedSessions {
		c.m = make(map[string]cachedSession)
	}
	c.m[hash] = e
}

// drop forgets the session of hash.
func (c *sessionCache) drop(hash string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	delete(c.m, hash)
}

// dropUser forgets every session of user.
func (c *sessionCache) dropUser(user string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for h, e := range c.m {
		if e.user == user {
			delete(c.m, h)
		}
	}
}

// prune forgets the entries expired or read too long ago, and reports how
// many.
func (c *sessionCache) prune(now time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for h, e := range c.m {
		if !now.Before(e.expires) || now.Sub(e.fetched) >= sessionCacheTTL || now.Before(e.fetched) {
			delete(c.m, h)
			n++
		}
	}
	return n
}
