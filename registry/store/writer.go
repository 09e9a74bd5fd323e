package store

import (
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// opKind selects what the writer does with an op.
type opKind uint8

const (
	// opFlush writes nothing; it closes the current batch and is answered
	// once everything before it is committed.
	opFlush opKind = iota
	// opAppend inserts op.entry into the journal with the next seq.
	opAppend
	// opAppendGroup inserts op.group into the journal with consecutive
	// seqs, all in the same transaction (AppendGroup).
	opAppendGroup
	// opFunc runs op.fn inside the batch transaction, after every earlier
	// op of the batch was applied.
	opFunc
	// opDeliver records a delivery mark for op.seq.
	opDeliver
	// opMarks records the delivery marks op.seqs, buffered since the last
	// (marks.go); each counts as one write.
	opMarks
	// opPut upserts op.row into op.table under the row key op.key, in the
	// group op.group.
	opPut
	// opDelete deletes the rows of op.table in the groups op.groups.
	opDelete
	// opExt runs op.ext, an extension's write (extension.go), inside the
	// batch transaction, in queue order with the other extension writes.
	opExt
)

// opResult is what a synchronous op reports after its batch commits.
type opResult struct {
	n   int64
	err error
}

// op is one queued write. Ops with a reply channel are synchronous: the
// writer commits as soon as it has drained what is already queued, then
// answers. Ops without one are asynchronous: their errors are logged,
// counted and returned by the next Flush or Close.
type op struct {
	kind   opKind
	name   string
	entry  Entry
	fn     func(w *writer) (int64, error)
	reply  chan opResult
	result int64

	entries []Entry      // opAppendGroup
	seq     int64        // opDeliver
	seqs    []int64      // opMarks
	table   *kernelTable // opPut, opDelete
	key     string       // opPut
	group   string       // opPut
	groups  []string     // opDelete
	row     []any        // opPut: the column values in table order
	// fresh marks an opPut that begins its group: no row of the group is
	// committed but those an earlier op deletes (kernelWrites).
	fresh bool
	ext   func(*Tx) error // opExt
	// done, when set, is told the op's outcome after its batch (opExt).
	done func(error)
}

// writer owns the single write connection. Only its goroutine touches conn
// and stmts.
type writer struct {
	conn  *writeConn
	queue <-chan *op
	wake  <-chan struct{} // Store.nudge
	// marks are the buffered delivery marks (marks.go), which the writer
	// moves into the queue (requeue, the queue's sending side) when an op
	// begins a batch and when it is idle (next).
	marks   *markBuffer
	requeue chan<- *op
	done    <-chan struct{} // closed when the Store closes
	rows    int
	delay   time.Duration
	// linger is how long a batch nobody waits for is gathered
	// (Options.BatchLinger); at or below delay, batches do not linger.
	linger time.Duration
	// gather is how long a batch a durability waiter hurries is gathered
	// when the previous commit left operations queued (Options.BusyGather);
	// backlog records whether it did.
	gather   time.Duration
	backlog  bool
	log      *slog.Logger
	counters *counters
	onAsync  func(o *op, err error)
	onCommit func(ops int) // test hook, called after each successful commit
	dur      *durability   // told of each commit; its waiters cut the batch delay short
	// ckpt is asked for a checkpoint each ckptEvery WAL pages
	// (checkpointPages), counted from ckptAt (checkpoint.go).
	ckpt              *checkpointer
	ckptEvery, ckptAt int64
	exited            chan struct{}
	batch             []op
	pending           pending
	// listeners tracks the registered journal listeners.
	listeners journalListeners
	// names maps the journal's names to their ids (journal_names.go).
	names journalNames
	// routes maps the journal's routes to their ids (journal_routes.go).
	routes journalRoutes
	// deliveries tracks the delivery watermark and the undelivered entries.
	deliveries deliveryTracker
	// keys tracks which journal partitions have lookup keys (journal_keys.go).
	keys keySummaries
	// high is the highest seq committed to the journal (appended or
	// tombstoned); txHigh the same inside the open transaction.
	high, txHigh int64
	// held are the writes of batches a storage failure rolled back, to be
	// committed ahead of the next batch, and untombstoned the failed
	// appends whose tombstones wait for a commit that succeeds
	// (storage_failure.go); health is what the writer saw of its storage.
	held         []op
	untombstoned []lostSeq
	health       *health
}

// counters are the Store's statistics, updated atomically.
type counters struct {
	enqueued  atomic.Int64
	committed atomic.Int64
	failed    atomic.Int64
	commits   atomic.Int64
	rollbacks atomic.Int64
	// commitNanos is the time spent in committed transactions, BEGIN to
	// COMMIT.
	commitNanos atomic.Int64
	// statements counts SQL statements the writer executed, including
	// BEGIN and COMMIT.
	statements atomic.Int64
	// queuePeak is the largest backlog the writer found when it started a
	// batch; queueFull counts asynchronous writes that found the queue full.
	queuePeak atomic.Int64
	queueFull atomic.Int64
	// walFrames is the pages the writer connection has written to the WAL
	// (writeConn.pagesWritten), as of its last commit.
	walFrames atomic.Int64
}

// Stats is a snapshot of the writer's counters.
type Stats struct {
	// Enqueued counts write operations accepted into the queue.
	Enqueued int64
	// Committed counts write operations that were committed.
	Committed int64
	// Failed counts write operations that failed (synchronous and
	// asynchronous).
	Failed int64
	// Commits counts committed transactions.
	Commits int64
	// Rollbacks counts rolled-back transactions.
	Rollbacks int64
	// CommitTime is the time spent in the Commits transactions, from BEGIN
	// to COMMIT: CommitTime/Commits is the mean journal write latency.
	CommitTime time.Duration
	// Checkpoints counts the checkpoint passes the store ran beside the
	// writer (checkpoint.go), and CheckpointTime the time they took.
	Checkpoints    int64
	CheckpointTime time.Duration
	// WALFrames counts the pages the writer's commits wrote to the WAL
	// (each a frame of one database page): what the commits cost in bytes
	// written, which the machine's load does not move.
	WALFrames int64
}

// exec runs a statement and returns the number of affected rows.
func (w *writer) exec(query string, args ...any) (int64, error) {
	w.counters.statements.Add(1)
	return w.conn.exec(query, args...)
}

// queryInt64s runs a query returning one integer column.
func (w *writer) queryInt64s(query string, args ...any) ([]int64, error) {
	w.counters.statements.Add(1)
	return w.conn.queryInt64s(query, args...)
}

// run is the writer goroutine: it collects batches from the queue and
// commits each in one transaction until the queue is closed and drained.
func (w *writer) run() {
	defer close(w.exited)
	w.tune()
	if err := w.loadKeySummaries(); err != nil {
		w.log.Error("store: journal lookup keys; lookups scan the journal", "err", err)
	} else if err := w.catchUpKeys(); err != nil {
		w.log.Error("store: journal lookup keys; lookups scan the partitions without", "err", err)
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer w.commitLeftMarks()
	defer w.commitHeld() // before the marks: they were made after it
	idle := time.NewTimer(time.Hour)
	idle.Stop()
	for {
		first, ok := w.next(idle)
		if !ok {
			return
		}
		batch, open := w.collect(first, timer)
		w.commit(batch)
		if !open {
			return // closed and drained: collect saw the end of the queue
		}
	}
}

// next waits for the op that begins the next batch; it reports false once
// the queue is closed and drained. The buffered delivery marks join that
// batch: they are moved into the queue, behind what is queued, when the op
// arrives, or after a batch delay without one (an idle organism; doc.go
// says why not right after each commit).
func (w *writer) next(idle *time.Timer) (*op, bool) {
	arrived := func(o *op, ok bool) (*op, bool) {
		if ok {
			w.marks.moveTo(w.requeue)
		}
		return o, ok
	}
	for {
		select {
		case o, ok := <-w.queue:
			return arrived(o, ok)
		default:
		}
		retry := w.mustRetry()
		if !w.marks.pending() && !retry {
			select {
			case o, ok := <-w.queue:
				return arrived(o, ok)
			case <-w.marks.wake: // a mark was buffered
				continue
			}
		}
		wait := w.delay
		if retry {
			wait = storageRetry
		}
		idle.Reset(wait)
		select {
		case o, ok := <-w.queue:
			idle.Stop()
			return arrived(o, ok)
		case <-idle.C:
			w.marks.moveTo(w.requeue)
			if retry {
				// Held writes or tombstones wait for the storage: a
				// batch of them alone (storage_failure.go).
				return queued(&op{kind: opFlush, name: "retry held writes"}), true
			}
		}
	}
}

// commitLeftMarks commits the marks still buffered once the queue is
// closed and drained: everything queued ahead of them is committed, and
// Close let no mark in after it closed the queue.
func (w *writer) commitLeftMarks() {
	if seqs := w.marks.take(); len(seqs) > 0 {
		w.commit(append(w.batch[:0], op{kind: opMarks, name: "mark delivered", seqs: seqs}))
	}
}

// writerPragmas tune the write connection for batched commits: statement
// journals (multi-row statements inside a transaction) stay in memory
// instead of a temporary file, and the page cache holds the hot index pages
// of a batch.
var writerPragmas = []string{
	`PRAGMA temp_store = MEMORY`,
	`PRAGMA cache_size = -16384`, // KiB
	// The checkpointer copies the WAL beside the writer (checkpoint.go);
	// the writer checkpoints itself only when the WAL outgrows this.
	`PRAGMA wal_autocheckpoint = ` + strconv.Itoa(autoCheckpointPages),
}

// tune applies writerPragmas; a failure only costs speed, so it is logged.
func (w *writer) tune() {
	for _, q := range writerPragmas {
		if _, err := w.conn.exec(q); err != nil {
			w.log.Warn("store: tune writer connection", "pragma", q, "err", err)
		}
	}
}

// collect gathers a batch starting with first: up to rows ops, waiting at
// most delay for more unless a synchronous op is in the batch, in which case
// it takes only what is already queued. A batch a durability waiter
// hurries commits at once too, unless it gathers (Options.BusyGather); one
// nobody waits for lingers (Options.BatchLinger). While it waits it sleeps
// until the delay ends or Store.nudge wakes it, not on each op, so
// producers do not hand the writer the CPU op by op. It reports whether
// the queue is still open.
func (w *writer) collect(first *op, timer *time.Timer) ([]op, bool) {
	if backlog := int64(len(w.queue) + 1); backlog > w.counters.queuePeak.Load() {
		w.counters.queuePeak.Store(backlog) // only the writer stores it
	}
	batch := append(w.takeHeld(w.batch[:0]), *first)
	release(first)
	urgent := batch[len(batch)-1].reply != nil
	// told: an op of the batch is told of its outcome (opExt's done).
	told := batch[len(batch)-1].done != nil
	waiting, lingered := false, false
	defer func() {
		if waiting {
			timer.Stop()
		}
		if lingered {
			w.dur.lingering.Store(false)
		}
	}()
	var gatherEnd time.Time
	if w.gather > 0 && w.backlog {
		gatherEnd = time.Now().Add(w.gather)
	}
	for {
	drain:
		for len(batch) < w.rows {
			select {
			case o, ok := <-w.queue:
				if !ok {
					return batch, false
				}
				batch = append(batch, *o)
				urgent = urgent || o.reply != nil
				told = told || o.done != nil
				release(o)
			default:
				break drain
			}
		}
		if urgent || len(batch) >= w.rows || (lingered && (told || w.dur.waited(w.high))) {
			return batch, true
		}
		if w.dur.urgent(w.high) {
			left := time.Until(gatherEnd)
			if left <= 0 {
				return batch, true
			}
			timer.Reset(left)
			waiting = true
			select {
			case <-timer.C:
				waiting = false
				gatherEnd = time.Time{} // take what is queued now, and commit
			case <-w.wake:
			case <-w.done:
				urgent = true // the store closes: commit now
			}
			continue
		}
		if !waiting {
			timer.Reset(w.delay)
			waiting = true
		}
		select {
		case <-timer.C:
			waiting = false
			if lingered || told || w.linger <= w.delay {
				urgent = true // take what is queued now, and commit
				continue
			}
			// The delay is over and nobody waits for the batch: linger.
			// lingering is set before the next check of the waiters, so
			// that a WaitCommitted caller either is seen by it or sees
			// lingering and wakes the writer.
			lingered = true
			w.dur.lingering.Store(true)
			timer.Reset(w.linger - w.delay)
			waiting = true
		case <-w.wake:
		case <-w.done:
			// The store closes: commit what is queued now; run's next
			// batches take the rest until the queue, closed just after
			// done, is drained. Waiting here for it to end instead could
			// outlast a long batch delay: Close closes done first.
			urgent = true
		}
	}
}

// commit applies batch in one transaction. If any op or the commit fails,
// the transaction is rolled back and every op is retried in a transaction of
// its own, so one bad op fails alone.
func (w *writer) commit(batch []op) {
	defer func() { w.batch = batch[:0] }()
	w.retryTombstones()
	writes := 0
	for i := range batch {
		if batch[i].kind != opFlush {
			writes++
		}
	}
	if writes == 0 {
		w.finish(batch, nil)
		return
	}
	if err := w.tx(batch); err != nil {
		if isStorageFailure(err) {
			w.failOrHold(batch, err) // storage_failure.go: splitting finds no op at fault
			return
		}
		if writes == 1 && !splittable(batch) {
			w.finish(batch, err)
			return
		}
		w.log.Warn("store: batch failed, retrying its operations one by one", "ops", writes, "err", err)
		for i := range batch {
			one := batch[i : i+1]
			switch {
			case batch[i].kind == opFlush:
				w.finish(one, nil)
			case splittable(one):
				w.retryMarks(&batch[i])
			default:
				if err := w.tx(one); isStorageFailure(err) {
					w.failOrHold(one, err)
				} else {
					w.finish(one, err)
				}
			}
		}
		return
	}
	w.health.ok()
	w.finish(batch, nil)
}

// splittable reports whether ops is a single opMarks of several marks,
// which a failed batch retries mark by mark.
func splittable(ops []op) bool {
	for i := range ops {
		if ops[i].kind != opFlush && (ops[i].kind != opMarks || len(ops[i].seqs) < 2) {
			return false
		}
	}
	return len(ops) > 0
}

// retryMarks retries the marks of a failed opMarks one by one, each in a
// transaction of its own, so that one bad mark fails alone as it would
// have as an op of its own.
func (w *writer) retryMarks(o *op) {
	for _, seq := range o.seqs {
		one := []op{{kind: opDeliver, name: o.name, seq: seq}}
		w.finish(one, w.tx(one))
	}
	*o = op{}
}

// tx runs ops in one transaction, updating the journal high-water mark and
// the delivery watermark.
func (w *writer) tx(ops []op) (err error) {
	start := time.Now()
	w.catchUp()
	if _, err := w.exec(`BEGIN IMMEDIATE`); err != nil {
		w.counters.rollbacks.Add(1)
		return fmt.Errorf("store: begin: %w", err)
	}
	w.deliveries.begin()
	defer func() {
		if err != nil {
			w.listeners.rolledBack()
			w.names.rolledBack()
			w.routes.rolledBack()
			w.deliveries.rollback()
			w.keys.rollback()
			w.txHigh = w.high
			if _, rerr := w.exec(`ROLLBACK`); rerr != nil && !isNoTransaction(rerr) {
				w.log.Error("store: rollback failed", "err", rerr)
			}
			w.counters.rollbacks.Add(1)
		}
	}()
	applied, high, err := w.apply(ops)
	if err != nil {
		return err
	}
	if high > 0 {
		w.summarizeClosed(partitionOf(high))
	}
	moved, err := w.persistDeliveries()
	if err != nil {
		return err
	}
	if high > 0 || moved {
		if _, err = w.exec(`UPDATE journal_state SET high_seq = max(high_seq, ?), delivered_seq = ? WHERE id = 1`,
			high, w.deliveries.mark); err != nil {
			return fmt.Errorf("store: update high-water mark: %w", err)
		}
	}
	if _, err = w.exec(`COMMIT`); err != nil {
		return fmt.Errorf("store: commit: %w", err)
	}
	w.countFrames()
	w.listeners.committed()
	w.names.committed()
	w.routes.committed()
	w.deliveries.commit()
	w.keys.commit()
	w.high = w.txHigh
	// Measured before the waiters wake: what they queue next is no backlog.
	w.backlog = len(w.queue) > 0
	w.dur.advanceTo(w.high)
	w.counters.commits.Add(1)
	w.counters.commitNanos.Add(int64(time.Since(start)))
	w.counters.committed.Add(int64(applied))
	if w.onCommit != nil {
		w.onCommit(applied)
	}
	return nil
}

// countFrames records the WAL frames written so far and asks for a
// checkpoint each ckptEvery of them; a failure to read them only
// leaves the statistic behind (and the writer's automatic checkpoint
// bounds the WAL).
func (w *writer) countFrames() {
	n, err := w.conn.pagesWritten()
	if err != nil {
		return
	}
	w.counters.walFrames.Store(n)
	if n-w.ckptAt >= w.ckptEvery && w.ckpt.request() {
		w.ckptAt = n
	}
}

// catchUp copies into the database file the WAL pages committed while the
// checkpointer ran, once it has copied the rest, so that the transaction
// that follows starts the WAL again from its beginning (checkpoint.go). A
// failure only leaves the WAL to grow to the backstop, so it is logged.
func (w *writer) catchUp() {
	if !w.ckpt.state.CompareAndSwap(ckptCopied, ckptIdle) {
		return
	}
	if _, err := w.conn.exec(`PRAGMA wal_checkpoint(PASSIVE)`); err != nil {
		w.log.Warn("store: checkpoint after the checkpointer's", "err", err)
	}
}

// isNoTransaction reports SQLite's "no transaction is active" (the commit
// failure already ended the transaction).
func isNoTransaction(err error) bool {
	return err != nil && strings.Contains(strings.ToLower(err.Error()), "no transaction is active")
}

// finish reports the outcome of ops in queue order: asynchronous failures
// are recorded before later flush markers are answered.
func (w *writer) finish(ops []op, err error) {
	for i := range ops {
		o := &ops[i]
		if err != nil && o.kind != opFlush {
			w.counters.failed.Add(int64(max(1, len(o.seqs)))) // opMarks: each mark is a write
			switch o.kind {
			case opAppend:
				w.tombstoneFailed(err, o.entry.Seq)
			case opAppendGroup:
				seqs := make([]int64, len(o.entries))
				for i := range o.entries {
					seqs[i] = o.entries[i].Seq
				}
				w.tombstoneFailed(err, seqs...)
			}
			if o.reply == nil && o.done == nil {
				w.onAsync(o, err)
			}
		}
		if o.done != nil {
			o.done(err)
		}
		if o.reply != nil {
			r := opResult{n: o.result, err: err}
			if o.kind == opFlush {
				r.err = nil
			}
			o.reply <- r
		}
		ops[i] = op{} // drop references held by the reused batch slice
	}
}

// tombstoneFailed records, in a transaction of its own, that the appends
// which were assigned seqs failed and were never committed, so the sequence
// stays gap-free for Verify and the loss is on record with its reason.
// When that transaction fails too (the storage failure that failed the
// appends), the tombstones wait for the next commit attempt
// (retryTombstones).
func (w *writer) tombstoneFailed(cause error, seqs ...int64) {
	seqs = slices.DeleteFunc(seqs, func(seq int64) bool { return seq <= 0 })
	if len(seqs) == 0 {
		return
	}
	for _, seq := range seqs {
		w.dur.fail(seq, cause.Error())
		w.untombstoned = append(w.untombstoned, lostSeq{seq: seq, reason: "append failed: " + cause.Error()})
		// Its seq is taken for good: a delivery mark made for it (the
		// pump handled the message it could not journal) is a no-op, not
		// a "not found" that fails a batch of held writes with it.
		w.deliveries.high = max(w.deliveries.high, seq)
	}
	if over := len(w.untombstoned) - maxUntombstoned; over > 0 {
		w.log.Error("store: too many failed appends wait for their tombstones; the oldest are forgotten",
			"forgotten", over, "first", w.untombstoned[0].seq)
		w.untombstoned = append(w.untombstoned[:0], w.untombstoned[over:]...)
	}
	w.retryTombstones()
}

// retryTombstones commits the tombstones of failed appends that wait for
// one, in a transaction of their own; they wait on when it fails.
func (w *writer) retryTombstones() {
	if len(w.untombstoned) == 0 {
		return
	}
	err := w.writeTombstones(w.untombstoned)
	if err == nil {
		clear(w.untombstoned)
		w.untombstoned = w.untombstoned[:0]
		return
	}
	if isStorageFailure(err) {
		w.health.failed(err, len(w.held))
		return // logged once by health
	}
	w.log.Error("store: cannot tombstone failed appends", "seqs", len(w.untombstoned),
		"first", w.untombstoned[0].seq, "err", err)
}

// writeTombstones commits tombstones for lost.
func (w *writer) writeTombstones(lost []lostSeq) error {
	if _, err := w.exec(`BEGIN IMMEDIATE`); err != nil {
		return err
	}
	now := time.Now().UnixNano()
	high := int64(0)
	for _, l := range lost {
		high = max(high, l.seq)
		if _, err := w.exec(`INSERT OR IGNORE INTO journal_tombstones (seq, deleted_at, reason) VALUES (?, ?, ?)`,
			l.seq, now, l.reason); err != nil {
			_, _ = w.exec(`ROLLBACK`)
			return err
		}
	}
	if _, err := w.exec(`UPDATE journal_state SET high_seq = max(high_seq, ?) WHERE id = 1`, high); err != nil {
		_, _ = w.exec(`ROLLBACK`)
		return err
	}
	if _, err := w.exec(`COMMIT`); err != nil {
		if _, rerr := w.exec(`ROLLBACK`); rerr != nil && !isNoTransaction(rerr) {
			w.log.Error("store: rollback failed", "err", rerr)
		}
		return err
	}
	w.deliveries.high = max(w.deliveries.high, high)
	w.high = max(w.high, high)
	w.txHigh = w.high
	w.dur.advanceTo(w.high)
	return nil
}

// close finalises the prepared statements and closes the connection.
func (w *writer) close() error { return w.conn.close() }
