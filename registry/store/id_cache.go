package store

import "fmt"

// idCache is the writer's map of the journal's names (journal_names.go) or
// routes (journal_routes.go) to their ids, and its set of (listener,
// profile) pairs with a sweep cursor (journalListeners, whose ids go
// unused). An entry it has not seen gets the next id and is inserted
// inside the transaction that first journals it. Past *limit committed
// entries (input that names many distinct senders or root tags, as dead
// letters may) an entry the map lacks is looked up in the table instead.
type idCache[K comparable] struct {
	limit *int
	ids   map[K]int64 // committed entries, up to *limit
	tx    map[K]int64 // entries the open transaction enters
	// fresh are the entries added since the last insert, as the INSERT's
	// arguments (the caller appends them).
	fresh []any
	// next is the id the next new entry gets; txNext the same inside the
	// open transaction.
	next, txNext int64
}

// newIDCache returns an empty cache of at most *limit committed entries.
func newIDCache[K comparable](limit *int) idCache[K] {
	return idCache[K]{limit: limit, ids: make(map[K]int64), tx: make(map[K]int64)}
}

// get returns the id of k if the cache knows it.
func (c *idCache[K]) get(k K) (int64, bool) {
	if id, ok := c.ids[k]; ok {
		return id, true
	}
	id, ok := c.tx[k]
	return id, ok
}

// full reports whether the cache holds *limit committed entries: an entry
// it lacks may be in the table.
func (c *idCache[K]) full() bool { return len(c.ids) >= *c.limit }

// keep caches the committed entry k, unless the cache is full.
func (c *idCache[K]) keep(k K, id int64) {
	if !c.full() {
		c.ids[k] = id
	}
}

// add gives k the next id; the caller appends its INSERT arguments to
// fresh.
func (c *idCache[K]) add(k K) int64 {
	id := c.txNext
	c.txNext++
	c.tx[k] = id
	return id
}

// committed makes the entries of the committed transaction known.
func (c *idCache[K]) committed() {
	for k, id := range c.tx {
		c.keep(k, id)
	}
	c.next = c.txNext
	c.rolledBack()
}

// rolledBack forgets the entries of the rolled-back transaction.
func (c *idCache[K]) rolledBack() {
	clear(c.tx)
	clear(c.fresh)
	c.fresh = c.fresh[:0]
	c.txNext = c.next
}

// insert enters the entries added since the last call with rs, inside the
// open transaction; what says what it does in an error.
func (c *idCache[K]) insert(w *writer, rs *rowStatement, what string) error {
	if len(c.fresh) == 0 {
		return nil
	}
	if _, err := w.execRows(rs, len(c.fresh)/rs.cols, c.fresh); err != nil {
		return fmt.Errorf("store: %s: %w", what, err)
	}
	clear(c.fresh)
	c.fresh = c.fresh[:0]
	return nil
}
