package store

import (
	"context"
	"crypto/sha256"
	"fmt"
)

// prepareEntry stamps, hashes and validates e for the writer. It does not
// copy e.Bytes: the appends take ownership of it.
func (s *Store) prepareEntry(e Entry) (Entry, error) {
	if e.Time.IsZero() {
		e.Time = s.opts.Clock()
	}
	if e.SHA256 == ([32]byte{}) {
		e.SHA256 = sha256.Sum256(e.Bytes)
	}
	e.Seq = 0
	if err := e.Validate(); err != nil {
		return Entry{}, err
	}
	s.threads.add(filterKey(keyThread, e.Thread)) // before the writer can commit it: MayHaveThread
	return e, nil
}

// Append enqueues e for the journal and returns without waiting for the
// commit. It stamps Time from Options.Clock when zero and computes SHA256
// when zero (a non-zero SHA256 is trusted; Verify checks it). Append takes
// ownership of e.Bytes without copying it: the writer reads the slice until
// the entry is committed, so the caller must not modify it after the call
// (pass a copy to reuse a buffer). It blocks only while the queue is full.
// It returns an ErrInvalid error for an entry missing a required field and
// ErrClosed after Close; commit errors surface in the next Flush or Close.
func (s *Store) Append(e Entry) error {
	_, err := s.AppendSeq(e)
	return err
}

// AppendSeq is Append that also returns the sequence number the entry will
// be committed with. Seqs are assigned in queue order, so the committed
// journal is always a gap-free prefix of the assigned seqs: after a crash
// every seq up to the last committed one is present (or tombstoned). An
// append that fails in the writer is tombstoned with reason "append
// failed: …". Use the seq with MarkDelivered once the entry was handled.
func (s *Store) AppendSeq(e Entry) (int64, error) {
	e, err := s.prepareEntry(e)
	if err != nil {
		return 0, err
	}
	o := op{kind: opAppend, name: "append", entry: e}
	if err := s.enqueueAsync(&o); err != nil {
		return 0, err
	}
	return o.entry.Seq, nil
}

// AppendGroup journals es as one unit: they get consecutive seqs in their
// order and are committed in one transaction, so after a crash either all
// of them are in the journal or none is. It returns the seq of the first
// (the others follow it; 0 for an empty group) without waiting for the
// commit. Like Append it stamps and hashes each entry and takes ownership
// of its Bytes, and blocks only while the queue is full. An invalid entry
// fails the whole group with ErrInvalid, journaling nothing; a group the
// writer cannot commit is tombstoned whole, and its failure surfaces like
// an Append's (Flush, WaitDurable).
func (s *Store) AppendGroup(es []Entry) (int64, error) {
	if len(es) == 0 {
		return 0, nil
	}
	group := make([]Entry, len(es))
	for i, e := range es {
		p, err := s.prepareEntry(e)
		if err != nil {
			return 0, fmt.Errorf("entry %d of a group of %d: %w", i, len(es), err)
		}
		group[i] = p
	}
	o := op{kind: opAppendGroup, name: "append group", entries: group}
	if err := s.enqueueAsync(&o); err != nil {
		return 0, err
	}
	return o.entries[0].Seq, nil
}

// AppendSync journals e like Append (taking ownership of e.Bytes) and waits
// for the commit, returning the assigned sequence number. Concurrent callers share commits. If ctx ends
// before the commit is confirmed the entry may still be committed.
func (s *Store) AppendSync(ctx context.Context, e Entry) (int64, error) {
	e, err := s.prepareEntry(e)
	if err != nil {
		return 0, err
	}
	return s.call(ctx, op{kind: opAppend, name: "append", entry: e})
}

// MarkDelivered records a delivery mark for seq, a message that reached a
// listener (an entry Undelivered reports), without waiting for the commit:
// the mark is buffered and committed with or after everything enqueued
// before the call (marks.go), a batch or two later, at the latest by the
// next Flush or Close. prune_on_delivery retention deletes delivered
// entries. The journal row itself is never edited: marks
// live in their own table. Marking a seq that was already pruned or marked,
// or an entry that is not a message to a listener (nothing delivers those),
// is a no-op; marking a seq that was never journaled is an asynchronous
// ErrNotFound.
func (s *Store) MarkDelivered(seq int64) error {
	if seq <= 0 {
		return fmt.Errorf("%w: delivery mark for seq %d", ErrInvalid, seq)
	}
	if seq > s.assigned.Load() {
		// Not journaled (yet): an op of its own, which the writer fails
		// with ErrNotFound unless the append is queued by then.
		return s.enqueueAsync(&op{kind: opDeliver, name: "mark delivered", seq: seq})
	}
	// The append of seq was sent (assigned is raised after the send): the
	// mark waits in the buffer and enters the queue behind it (marks.go).
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	s.counters.enqueued.Add(1)
	if full := s.marks.add(seq); full != nil {
		if len(s.queue) == cap(s.queue) {
			s.counters.queueFull.Add(1)
		}
		return s.send(context.Background(), &op{kind: opMarks, name: "mark delivered", seqs: full})
	}
	return nil
}
