package federation

import (
	"sync"
	"time"
)

// unsettledTTL bounds how long a copy waits for its original's
// acknowledgement. It outlives the original's hash in memory (recent keeps
// it at most recentWindow past its sent time, which may run futureSkew
// ahead of the clock), so that a copy arriving once the entry is gone is
// looked up in the seen table: a hash that never commits (the original's
// acknowledgement dropped) does not refuse it there, and it is processed.
const unsettledTTL = recentWindow + futureSkew + 2*time.Second

// unsettled holds the hashes of a gateway's received envelopes that were
// processed (or are being processed) but whose acknowledgement is not
// sent yet: the envelope's own, deferred until the handler's output that
// carries an answer is journaled (pump.AfterJournal) or until its seen
// hash is durable. A copy of one of them — the peer sends its outbox again
// after a reconnect — must not be acknowledged before the original is:
// the peer deletes the envelope on the first acknowledgement, and a crash
// before the original's output commits would lose it. The copy is recorded
// against the original instead, with the link it came on (the original's
// may be gone), and acknowledged when the original is.
//
// A call's copies are kept the same way, by conversation, while the call
// is being injected (gateway.inflight, under the gateway's lock).
//
// An entry lives from the original's delivery to its acknowledgement. One
// whose acknowledgement never comes (the handling dropped at a shutdown:
// the peer sends the envelope again later) or comes late (a halt parked
// the answer for the message's next handling: park.go) is swept
// unsettledTTL after it was made, its copies left unacknowledged.
type unsettled struct {
	mu      sync.Mutex
	byHash  map[[32]byte]*original
	sweepAt time.Time
}

// original is an envelope processed and not acknowledged yet, with the
// copies of it that came meanwhile.
type original struct {
	hash   [32]byte
	at     time.Time
	copies []copyAck
	// settled is set once a call's original is acknowledged (settleCall):
	// a copy that finds it so is acknowledged at once.
	settled bool
	// cancelled is set when the peer cancels the call while it is being
	// injected (onCancel): serveCall kills its conversation once it is
	// in the pump, as the cancel found none to kill yet.
	cancelled bool
}

// maxCopies bounds the copies one original keeps to acknowledge with it:
// a peer resends its outbox once per reconnect, so a few cover every
// honest case, and a peer that sends one envelope over and over while its
// original waits cannot grow the list. A copy past the bound is refused
// unacknowledged (the peer sends it again later).
const maxCopies = 8

// addCopy records a copy to acknowledge with o and reports whether it was
// taken (false: o holds maxCopies already).
func (o *original) addCopy(c *conn, id string) bool {
	if len(o.copies) >= maxCopies {
		return false
	}
	o.copies = append(o.copies, copyAck{c: c, id: id})
	return true
}

// copyAck is a copy's acknowledgement: its id on its link.
type copyAck struct {
	c  *conn
	id string
}

// claim decides, under the lock, whether the envelope with hash h is the
// original or a copy of one not acknowledged yet. A copy (its hash
// unsettled) is recorded to be acknowledged on c under id with the
// original, and claim reports it joined (and dup). Otherwise isCopy
// reports whether it was received before (an error leaves it unclaimed);
// one that was not becomes an original, returned, whose acknowledgement
// must settle it.
// isCopy runs under the lock, so that a copy delivered on another link at
// the same time finds the original recorded once its hash is.
func (u *unsettled) claim(h [32]byte, c *conn, id string, now time.Time,
	isCopy func() (bool, error)) (o *original, joined, dup bool, err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if o := u.byHash[h]; o != nil {
		o.addCopy(c, id)
		return nil, true, true, nil
	}
	if dup, err = isCopy(); err != nil || dup {
		return nil, false, dup, err
	}
	u.sweep(now)
	if u.byHash == nil {
		u.byHash = map[[32]byte]*original{}
	}
	o = &original{hash: h, at: now}
	u.byHash[h] = o
	return o, false, false, nil
}

// settle forgets o once it is acknowledged and acknowledges its copies,
// each on its own link (a closed one drops it: the peer sends it again).
func (u *unsettled) settle(o *original) {
	if o == nil {
		return
	}
	u.mu.Lock()
	if u.byHash[o.hash] == o {
		delete(u.byHash, o.hash)
	}
	copies := o.copies
	o.copies = nil
	u.mu.Unlock()
	for _, k := range copies {
		k.c.acks.send(frame{Type: frameAck, ID: k.id, Duplicate: true})
	}
}

// drop forgets o, which was not processed (its link ended first): the
// peer sends it again, and the copies that joined it are left
// unacknowledged as it is.
func (u *unsettled) drop(o *original) {
	if o == nil {
		return
	}
	u.mu.Lock()
	if u.byHash[o.hash] == o {
		delete(u.byHash, o.hash)
	}
	o.copies = nil
	u.mu.Unlock()
}

// sweep drops the originals made before unsettledTTL, at most every
// unsettledTTL/4; with u.mu held.
func (u *unsettled) sweep(now time.Time) {
	if now.Before(u.sweepAt) {
		return
	}
	u.sweepAt = now.Add(unsettledTTL / 4)
	for h, o := range u.byHash {
		if now.Sub(o.at) > unsettledTTL {
			delete(u.byHash, h)
		}
	}
}
