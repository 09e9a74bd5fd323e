package store

import (
	"errors"
	"time"
)

// A storage failure — the disk is full (SQLITE_FULL: ENOSPC, or a WAL
// that cannot grow) or a write fails (SQLITE_IOERR: EIO, EFBIG past a
// file size limit) — fails every transaction alike until the operator
// frees space, and then none. The writer does not split such a batch to
// find the op at fault, as it does for one op's own error (writer.commit):
//
//   - the batch's journal appends fail: their waiters learn it at once
//     (WaitDurable, AppendSync: the pump refuses the message as not
//     journaled), and each is tombstoned, at the next commit that succeeds
//     if not at once (untombstoned), so that journal verify tells the loss
//     of a refused message from that of an acknowledged one;
//   - a synchronous write (its caller waits for its outcome) and an
//     extension write told of its outcome fail, and their callers decide;
//   - every other write — the durable kernel state (threads, watchers,
//     context slots and segments) and delivery marks, which nobody waits
//     for — is held and committed, in its order, ahead of the next batch
//     (held): dropping some of them while later ones commit left histories
//     with holes that the next start refused ("slot index 43 at position
//     5"), a data directory that could no longer be opened.
//
// While writes are held or tombstones wait, the writer retries every
// storageRetry even when nothing new is queued, so the store recovers by
// itself once space is freed, without a restart (TestDiskFullRecovers).

// storageRetry is how often an idle writer retries held writes and
// tombstones while the storage fails.
const storageRetry = 250 * time.Millisecond

// maxHeld bounds the writes held across storage failures; beyond it the
// oldest fail (and are logged), so that a disk full for hours costs no
// more memory than that.
const maxHeld = 1 << 16

// maxUntombstoned bounds the failed appends waiting for their tombstones;
// beyond it the oldest are forgotten (journal verify then reports their
// seqs as a gap).
const maxUntombstoned = 1 << 20

// sqliteFull and sqliteIOErr are SQLite's primary result codes for a full
// database or disk and for an I/O error.
const (
	sqliteFull  = 13
	sqliteIOErr = 10
)

// isStorageFailure reports whether err is SQLite's SQLITE_FULL or an
// SQLITE_IOERR (any extended code).
func isStorageFailure(err error) bool {
	var c interface{ Code() int }
	if !errors.As(err, &c) {
		return false
	}
	switch c.Code() & 0xff {
	case sqliteFull, sqliteIOErr:
		return true
	}
	return false
}

// lostSeq is a failed append whose tombstone is not committed yet.
type lostSeq struct {
	seq    int64
	reason string
}

// holdable reports whether o is a write nobody waits for, which a storage
// failure holds for the next batch rather than failing.
func holdable(o *op) bool {
	switch o.kind {
	case opFlush, opAppend, opAppendGroup:
		return false
	}
	return o.reply == nil && o.done == nil
}

// failOrHold ends batch after a storage failure err: its appends,
// synchronous writes and told extension writes fail, its flushes are
// answered, and its other writes are held for the next batch.
func (w *writer) failOrHold(batch []op, err error) {
	held := 0
	for i := range batch {
		if holdable(&batch[i]) {
			w.held = append(w.held, batch[i])
			batch[i] = op{}
			held++
			continue
		}
		w.finish(batch[i:i+1], err)
	}
	if over := len(w.held) - maxHeld; over > 0 {
		w.log.Error("store: too many writes held while the storage fails; the oldest fail",
			"failed", over, "held", maxHeld, "err", err)
		w.finish(w.held[:over], err)
		w.held = append(w.held[:0], w.held[over:]...)
	}
	w.health.failed(err, len(w.held))
}

// takeHeld moves the held writes into batch, ahead of everything else.
func (w *writer) takeHeld(batch []op) []op {
	batch = append(batch, w.held...)
	clear(w.held)
	w.held = w.held[:0]
	return batch
}

// mustRetry reports whether held writes or tombstones wait for the
// storage to recover.
func (w *writer) mustRetry() bool { return len(w.held) > 0 || len(w.untombstoned) > 0 }

// commitHeld commits the writes still held once the queue is closed and
// drained, and fails them when the storage still fails.
func (w *writer) commitHeld() {
	if len(w.held) == 0 {
		w.retryTombstones()
		return
	}
	batch := w.takeHeld(w.batch[:0])
	w.retryTombstones()
	if err := w.tx(batch); err != nil {
		w.log.Error("store: held writes failed at close", "writes", len(batch), "err", err)
		w.finish(batch, err)
		w.batch = batch[:0]
		return
	}
	w.finish(batch, nil)
	w.batch = batch[:0]
	w.health.ok()
}
