package store

import "sync"

// markBuffer gathers delivery marks on the marking goroutines and hands
// them to the write queue as one op (opMarks) per group commit instead of
// one op per delivered envelope (a pooled op copy, a channel send and the
// writer's copy of the op into its batch: ~0.5-1 µs each).
//
// A mark must never commit before anything queued ahead of it (the
// journaled answer of the message it marks, the kernel writes of the turn
// that handled it): a SIGKILL would then leave the message marked but its
// answer lost. So marks are only ever moved later in queue order, never
// earlier: a mark enters the queue inside an op sent after the mark was
// made, which the queue orders behind every op whose send had completed by
// then, and the writer applies it in the transaction of that op or a later
// one. (Marks taken by the writer at each transaction, beside the queue,
// committed before the answers queued ahead of them: doc.go.) A mark left
// in the buffer by a crash costs what an uncommitted mark always did:
// recovery finds the message undelivered and its handling's output
// journaled, and marks it (pump/organism's recovery).
//
// Who moves the buffer into the queue: the writer when an op arrives that
// begins a batch, or after a batch delay without one (the first mark into
// an empty buffer wakes it), with a send that never blocks (writer.next); the marking goroutine itself once the buffer
// holds markBufferMax marks (the writer is behind, the queue full); Flush
// before its flush op; and, after Close drained the queue, the writer
// commits what is left.
type markBuffer struct {
	mu   sync.Mutex
	seqs []int64
	// closed is set by Close before it closes the queue: nothing is sent
	// on the queue after it.
	closed bool
	// wake tells an idle writer that the buffer is no longer empty.
	wake chan struct{}
}

// markBufferMax is the number of buffered marks at which the marking
// goroutine sends them itself (blocking while the queue is full, as an
// asynchronous op always did).
const markBufferMax = 4096

// add buffers seq. It returns the buffered marks, taking them out, when
// they reached markBufferMax (the caller sends them), else nil.
func (b *markBuffer) add(seq int64) []int64 {
	b.mu.Lock()
	b.seqs = append(b.seqs, seq)
	n := len(b.seqs)
	var full []int64
	if n >= markBufferMax {
		full, b.seqs = b.seqs, nil
	}
	b.mu.Unlock()
	if n == 1 {
		select {
		case b.wake <- struct{}{}:
		default: // a wake-up is pending
		}
	}
	return full
}

// pending reports whether marks are buffered.
func (b *markBuffer) pending() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.seqs) > 0
}

// take returns the buffered marks, emptying the buffer.
func (b *markBuffer) take() []int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	seqs := b.seqs
	b.seqs = nil
	return seqs
}

// putBack buffers seqs again (a send that did not happen).
func (b *markBuffer) putBack(seqs []int64) {
	b.mu.Lock()
	b.seqs = append(b.seqs, seqs...)
	b.mu.Unlock()
}

// close stops moveTo from sending on the queue (Close is about to close it).
func (b *markBuffer) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
}

// moveTo sends the buffered marks on queue as one opMarks without blocking
// (the writer calls it: it must not wait for room in its own queue). When
// the queue is full or closing they stay buffered.
func (b *markBuffer) moveTo(queue chan<- *op) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.seqs) == 0 || b.closed {
		return
	}
	p := queued(&op{kind: opMarks, name: "mark delivered", seqs: b.seqs})
	select {
	case queue <- p:
		b.seqs = nil
	default:
		release(p) // full: the next commit, or the marking goroutines, send them
	}
}
