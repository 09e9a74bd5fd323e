package federation

import (
	"encoding/binary"
	"fmt"
	"sync"
	"time"
)

// recentWindow is how far back, by the time an envelope says it was sent,
// the receive path answers "was it received before?" from memory instead
// of the state's tables. Envelopes on a live link are sent milliseconds
// before they arrive; older ones (resends after an outage or a restart)
// are looked up in the tables as before.
const recentWindow = time.Minute

// recent is what the receive path needs to refuse copies, kept in memory
// for the envelopes sent within recentWindow: the hashes of the envelopes
// processed (the seen table's rows) and the conversations begun for the
// peer's calls with whether the journal holds each (the received table's).
// A lookup in the tables reads pages the last commit invalidated on a read
// connection — tens of µs for each envelope a link carries — where these
// maps answer at once.
//
// Memory answers only for an envelope sent at or after horizon (when the
// manager was made) and within recentWindow of now; there it is exact: an
// envelope is accepted only when sent at most futureSkew ahead of the
// receiver's clock, so one sent at T can have been received no earlier
// than T-futureSkew. Every copy received in this life was recorded here
// (and is kept while its sent time is within the window: entries are
// dropped by sent time); every one received before it, sent at or after
// horizon, was loaded from the tables at the start (load), under its sent
// time (seenKey), and a hash an earlier version recorded at or after
// horizon-futureSkew under its row's time plus futureSkew (no earlier
// than its real one). Memory may run ahead of the tables, never behind: it records
// what the queued writes will commit.
type recent struct {
	mu sync.Mutex
	// horizon is the earliest sent time memory answers for (unix ns).
	horizon int64
	// low is the earliest second still kept: the buckets below it were
	// dropped, so memory does not answer for envelopes sent then.
	low int64
	// seen maps an envelope's hash to the sent time it was recorded under.
	seen map[[32]byte]int64
	// received maps a conversation to its call's sent time and state
	// (callDone or callUncertain).
	received map[string]receivedMark
	// buckets lists the keys recorded per second of sent time, to drop
	// them as they leave the window.
	buckets map[int64][]recentKey
}

// receivedMark is a conversation's entry in recent.received.
type receivedMark struct {
	sent  int64
	state int
}

// recentKey is one entry of recent: a hash (seen) or a conversation
// (received, conv set).
type recentKey struct {
	hash [32]byte
	conv string
}

// newRecent returns an empty recent answering for envelopes sent from
// horizon on.
func newRecent(horizon time.Time) *recent {
	return &recent{horizon: horizon.UnixNano(), low: second(horizon.Add(-recentWindow).UnixNano()),
		seen: map[[32]byte]int64{}, received: map[string]receivedMark{}, buckets: map[int64][]recentKey{}}
}

// loadSeen records the seen rows query (with arg) reads: a hash under its
// key's sent time, one an earlier version recorded since since under its
// row's time plus futureSkew. With r.mu held.
func (r *recent) loadSeen(d *db, query string, arg any, since int64) error {
	rows, err := d.b.reads().Query(query, arg)
	if err != nil {
		return fmt.Errorf("federation: seen: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var h []byte
		var at int64
		if err := rows.Scan(&h, &at); err != nil {
			return fmt.Errorf("federation: seen: %w", err)
		}
		var k [32]byte
		switch len(h) {
		case seenKeySize: // seenKey: under the envelope's sent time
			copy(k[:], h[8:])
			r.putSeen(k, int64(binary.BigEndian.Uint64(h)))
		case len(k): // an earlier version's: under its row's time plus futureSkew
			if at >= since {
				copy(k[:], h)
				r.putSeen(k, at+int64(futureSkew))
			}
		default: // not a hash of ours: never matches one
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("federation: seen: %w", err)
	}
	return nil
}

// second is the bucket of a unix ns time.
func second(ns int64) int64 { return ns / int64(time.Second) }

// load records the rows of the seen and received tables that may record
// a copy of an envelope memory answers for: the hashes of the envelopes
// sent since horizon (a range of their keys, seenKey: a copy has the same
// sent time), those an earlier version recorded since horizon-futureSkew
// (legacySeen), and the calls received since then.
func (r *recent) load(d *db) error {
	since := r.horizon - int64(futureSkew)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.loadSeen(d, `SELECT hash, at FROM federation_seen WHERE hash >= ? AND length(hash) = `+
		fmt.Sprint(seenKeySize), sentPrefix(time.Unix(0, r.horizon)), since); err != nil {
		return err
	}
	if d.legacySeen.Load() {
		if err := r.loadSeen(d, `SELECT hash, at FROM federation_seen WHERE length(hash) <> `+
			fmt.Sprint(seenKeySize)+` AND at >= ?`, since, since); err != nil {
			return err
		}
	}
	rrows, err := d.b.reads().Query(`SELECT conv, done, at FROM federation_received WHERE at >= ?`, since)
	if err != nil {
		return fmt.Errorf("federation: received: %w", err)
	}
	defer rrows.Close()
	for rrows.Next() {
		var conv string
		var done int
		var at int64
		if err := rrows.Scan(&conv, &done, &at); err != nil {
			return fmt.Errorf("federation: received: %w", err)
		}
		state := callUncertain
		if done == 1 {
			state = callDone
		}
		r.putReceived(conv, at+int64(futureSkew), state)
	}
	if err := rrows.Err(); err != nil {
		return fmt.Errorf("federation: received: %w", err)
	}
	return nil
}

// covers reports whether memory answers for an envelope sent at sent (unix
// ns), now being now; with r.mu held.
func (r *recent) covers(sent, now int64) bool {
	r.drop(now)
	return sent >= r.horizon && sent >= now-int64(recentWindow) && second(sent) >= r.low
}

// drop forgets the entries sent before the window; with r.mu held.
func (r *recent) drop(now int64) {
	cut := second(now - int64(recentWindow))
	if len(r.buckets) == 0 {
		r.low = max(r.low, cut)
		return
	}
	for ; r.low < cut; r.low++ {
		keys, ok := r.buckets[r.low]
		if !ok {
			continue
		}
		delete(r.buckets, r.low)
		for _, k := range keys {
			if k.conv != "" {
				if m, ok := r.received[k.conv]; ok && second(m.sent) == r.low {
					delete(r.received, k.conv)
				}
			} else if s, ok := r.seen[k.hash]; ok && second(s) == r.low {
				delete(r.seen, k.hash)
			}
		}
	}
}

// putSeen records hash under sent; with r.mu held.
func (r *recent) putSeen(hash [32]byte, sent int64) {
	b := second(sent)
	if b < r.low {
		return // out of the window already: memory does not answer for it
	}
	if old, ok := r.seen[hash]; ok && old >= sent {
		return
	}
	r.seen[hash] = sent
	r.buckets[b] = append(r.buckets[b], recentKey{hash: hash})
}

// putReceived records conv's call, sent at sent, in state; with r.mu held.
func (r *recent) putReceived(conv string, sent int64, state int) {
	b := second(sent)
	if b < r.low {
		return
	}
	old, ok := r.received[conv]
	if !ok || second(old.sent) != b {
		r.buckets[b] = append(r.buckets[b], recentKey{conv: conv})
	}
	if ok && old.sent > sent {
		sent = old.sent
	}
	r.received[conv] = receivedMark{sent: sent, state: state}
}

// seenCovers reports whether memory answers for an envelope sent at sent.
func (r *recent) seenCovers(sent, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.covers(sent.UnixNano(), now.UnixNano())
}

// checkSeen records hash, of an envelope sent at sent, as received and
// reports whether it was before; ok is false when memory does not answer
// for it (the tables must).
func (r *recent) checkSeen(hash [32]byte, sent, now time.Time) (dup, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := sent.UnixNano()
	if !r.covers(s, now.UnixNano()) {
		return false, false
	}
	if _, dup = r.seen[hash]; !dup {
		r.putSeen(hash, s)
	}
	return dup, true
}

// receivedState answers db.received for conv's call, sent at sent: ok is
// false when memory does not answer for it (the tables must).
func (r *recent) receivedState(conv string, sent, now time.Time) (state int, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.covers(sent.UnixNano(), now.UnixNano()) {
		return 0, false
	}
	if m, found := r.received[conv]; found {
		return m.state, true
	}
	return callNew, true
}

// begin records that conv's call, sent at sent, is being received (its
// received row is queued): uncertain until done.
func (r *recent) begin(conv string, sent time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m, ok := r.received[conv]; ok && m.state == callDone {
		return
	}
	r.putReceived(conv, sent.UnixNano(), callUncertain)
}

// done records that the journal holds conv's call.
func (r *recent) done(conv string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m, ok := r.received[conv]; ok {
		m.state = callDone
		r.received[conv] = m
	}
}

// forget drops conv: its call was not injected after all (its received
// row is deleted).
func (r *recent) forget(conv string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.received, conv)
}
