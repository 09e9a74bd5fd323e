package federation

import (
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// maxBatch bounds the writes one group commit carries.
const maxBatch = 1024

// lazyDelay is how long a lazy write (one nobody waits for) may wait for
// company before it is committed on its own.
const lazyDelay = 5 * time.Millisecond

// errStateClosed: a write submitted after the federation state closed.
var errStateClosed = errors.New("federation: state closed")

// write is one change of the federation state: apply runs inside a group
// commit's transaction; done (when set) is told the outcome once the
// transaction committed (nil) or failed, on the committer's goroutine, so
// it must not block.
type write struct {
	apply func(s *stmts) error
	done  func(error)
	// lazy writes (a delete nobody waits for) ride with the next commit,
	// or after lazyDelay.
	lazy bool
}

// committer writes the federation state in group commits: every write
// submitted while a transaction commits joins the next one, so concurrent
// senders and receivers share one commit (SQLite's cost is per commit, not
// per row) and each is told when its write is durable.
type committer struct {
	db    *sql.DB
	prep  *stmts
	queue chan *write
	// mu guards closed; submitters hold it for reading while they queue.
	mu     sync.RWMutex
	closed bool
	exited chan struct{}
	// commits counts the transactions committed (StateCommits).
	commits atomic.Int64
}

// stmts are the prepared statements writes use; inside a group commit
// they are bound to its transaction.
type stmts struct {
	tx                                           *sql.Tx
	enqueue, record, acked, seen, serveBegin     *sql.Stmt
	serveEnd, callDone, received, forgetReceived *sql.Stmt
	injected                                     *sql.Stmt
}

// statements are the SQL texts of stmts, in its field order.
var statements = [...]string{
	`INSERT INTO outbox (gateway, id, env, created) VALUES (?, ?, ?, ?)`,
	`INSERT INTO calls (link_thread, gateway, caller_thread, digest, created) VALUES (?, ?, ?, ?, ?)`,
	`DELETE FROM outbox WHERE id = ?`,
	`INSERT OR IGNORE INTO seen (hash, at) VALUES (?, ?)`,
	`INSERT OR REPLACE INTO served (conv, gateway, link_thread, created) VALUES (?, ?, ?, ?)`,
	`DELETE FROM served WHERE conv = ?`,
	`DELETE FROM calls WHERE link_thread = ?`,
	`INSERT OR IGNORE INTO received (conv, at) VALUES (?, ?)`,
	`DELETE FROM received WHERE conv = ?`,
	`UPDATE received SET done = 1 WHERE conv = ?`,
}

// newCommitter prepares the statements and starts the committer.
func newCommitter(db *sql.DB) (*committer, error) {
	var list [len(statements)]*sql.Stmt
	for i, q := range statements {
		s, err := db.Prepare(q)
		if err != nil {
			for _, p := range list[:i] {
				_ = p.Close()
			}
			return nil, fmt.Errorf("federation: prepare: %w", err)
		}
		list[i] = s
	}
	c := &committer{db: db, queue: make(chan *write, maxBatch), exited: make(chan struct{}),
		prep: &stmts{enqueue: list[0], record: list[1], acked: list[2], seen: list[3], serveBegin: list[4],
			serveEnd: list[5], callDone: list[6], received: list[7], forgetReceived: list[8], injected: list[9]}}
	go c.run()
	return c, nil
}

// submit queues w; after close, w is told errStateClosed at once.
func (c *committer) submit(w *write) {
	c.mu.RLock()
	if c.closed {
		c.mu.RUnlock()
		if w.done != nil {
			w.done(errStateClosed)
		}
		return
	}
	c.queue <- w
	c.mu.RUnlock()
}

// do runs apply in a group commit and waits until it is durable.
func (c *committer) do(apply func(s *stmts) error) error {
	ch := make(chan error, 1)
	c.submit(&write{apply: apply, done: func(err error) { ch <- err }})
	return <-ch
}

// async runs apply in a coming group commit without waiting (a lazy
// write); a failure is reported to onErr (when set).
func (c *committer) async(apply func(s *stmts) error, onErr func(error)) {
	c.submit(&write{apply: apply, lazy: true, done: func(err error) {
		if err != nil && onErr != nil {
			onErr(err)
		}
	}})
}

// later runs apply in a coming group commit without forcing one: it rides
// with the next write somebody waits for, or commits after lazyDelay. done
// (when set) is told the outcome once that commit is durable, so what waits
// on it (an acknowledgement) still follows the write it needs.
func (c *committer) later(apply func(s *stmts) error, done func(error)) {
	c.submit(&write{apply: apply, lazy: true, done: done})
}

// close commits what is queued and stops the committer.
func (c *committer) close() {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		close(c.queue)
	}
	c.mu.Unlock()
	<-c.exited
	p := c.prep
	for _, s := range []*sql.Stmt{p.enqueue, p.record, p.acked, p.seen, p.serveBegin, p.serveEnd, p.callDone,
		p.received, p.forgetReceived, p.injected} {
		_ = s.Close()
	}
}

// run commits the queued writes in batches until close: each batch is
// what is queued once the first write arrives (after letting the
// goroutines about to write run), and — when nobody waits for any of it —
// what comes within lazyDelay.
func (c *committer) run() {
	defer close(c.exited)
	batch := make([]*write, 0, maxBatch)
	errs := make([]error, 0, maxBatch)
	timer := time.NewTimer(lazyDelay)
	timer.Stop()
	for w := range c.queue {
		batch = append(batch[:0], w)
		urgent := !w.lazy
		if urgent {
			runtime.Gosched()
		}
		batch, urgent = c.drain(batch, urgent)
		if !urgent && len(batch) < maxBatch {
			timer.Reset(lazyDelay)
		wait:
			for len(batch) < maxBatch {
				select {
				case w, ok := <-c.queue:
					if !ok {
						break wait
					}
					batch = append(batch, w)
					if !w.lazy {
						batch, _ = c.drain(batch, true)
						break wait
					}
				case <-timer.C:
					break wait
				}
			}
			timer.Stop()
		}
		errs = c.commit(batch, errs[:0])
		for i, w := range batch {
			if w.done != nil {
				w.done(errs[i])
			}
			batch[i] = nil
		}
	}
}

// drain adds what is queued to batch (up to maxBatch) without waiting;
// urgent becomes true when one of them is waited for.
func (c *committer) drain(batch []*write, urgent bool) ([]*write, bool) {
	for len(batch) < maxBatch {
		select {
		case w, ok := <-c.queue:
			if !ok {
				return batch, urgent
			}
			batch = append(batch, w)
			urgent = urgent || !w.lazy
		default:
			return batch, urgent
		}
	}
	return batch, urgent
}

// commit applies batch in one transaction and returns each write's outcome.
// A write whose statement fails is told its error; the others commit (a
// failed SQLite statement rolls back only itself).
func (c *committer) commit(batch []*write, errs []error) []error {
	tx, err := c.db.Begin()
	if err != nil {
		for range batch {
			errs = append(errs, fmt.Errorf("federation: state: %w", err))
		}
		return errs
	}
	s := &stmts{tx: tx}
	p := c.prep
	s.enqueue, s.record, s.acked, s.seen = tx.Stmt(p.enqueue), tx.Stmt(p.record), tx.Stmt(p.acked), tx.Stmt(p.seen)
	s.serveBegin, s.serveEnd, s.callDone = tx.Stmt(p.serveBegin), tx.Stmt(p.serveEnd), tx.Stmt(p.callDone)
	s.received, s.forgetReceived, s.injected = tx.Stmt(p.received), tx.Stmt(p.forgetReceived), tx.Stmt(p.injected)
	for _, w := range batch {
		errs = append(errs, w.apply(s))
	}
	if err := tx.Commit(); err != nil {
		_ = tx.Rollback()
		for i := range errs {
			errs[i] = fmt.Errorf("federation: state: commit: %w", err)
		}
		return errs
	}
	c.commits.Add(1)
	return errs
}
