package federation

import "sync/atomic"

// rowClaim settles the race between the queued insert of an outbox row,
// which rides a coming commit, and the acknowledgement that makes the row
// useless: an acknowledgement that comes before the insert ran cancels it,
// and then neither the insert nor a delete is written. The state goes
// through the same durable states as an insert and a delete that commit
// together, which the writes' order allows anyway. This spares a busy or a
// sequential link two statements per envelope and the outbox's page in the
// commit.
type rowClaim struct{ s atomic.Int32 }

const (
	rowQueued int32 = iota
	rowWritten
	rowCancelled
)

// write reports whether the queued insert is to run: it is not cancelled.
// It runs again when its transaction was rolled back and retried.
func (r *rowClaim) write() bool {
	for {
		switch r.s.Load() {
		case rowCancelled:
			return false
		case rowWritten:
			return true
		}
		if r.s.CompareAndSwap(rowQueued, rowWritten) {
			return true
		}
	}
}

// cancel reports whether the insert was cancelled before it ran (no row
// exists or will); false means the row is written, or being written, and
// must be deleted.
func (r *rowClaim) cancel() bool { return r.s.CompareAndSwap(rowQueued, rowCancelled) }

// written marks a row known to be written (loaded from the state, or
// written before its entry joined the outbox).
func (r *rowClaim) written() { r.s.Store(rowWritten) }

// cancelled reports whether the insert was cancelled: it never runs.
func (r *rowClaim) cancelled() bool { return r.s.Load() == rowCancelled }
