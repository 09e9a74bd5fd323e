package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// DatabaseFileName is the name of the SQLite database inside the data
// directory.
const DatabaseFileName = "xmlpipe.db"

// maxAsyncErrs bounds how many asynchronous write errors are kept between
// two Flush calls; the rest are counted.
const maxAsyncErrs = 16

// Store is the durable store of one data directory. Its methods are safe for
// concurrent use.
type Store struct {
	// Reader holds the store's read methods (Tail, After, Thread,
	// Conversation, Threads, Count, LastSeq, Undelivered, Verify) over the
	// read-only pool; Close closes it.
	*Reader

	dir  string
	opts Options
	log  *slog.Logger
	lock *dirLock
	wdb  *sql.DB
	rdb  *sql.DB
	w    *writer
	// ckpt checkpoints the WAL beside the writer (checkpoint.go).
	ckpt *checkpointer

	mu     sync.RWMutex // guards closed and sending on queue
	closed bool
	queue  chan *op // pooled copies (queue.go)
	// wake cuts the writer's batch delay short (nudge).
	wake chan struct{}
	// marks buffers delivery marks on their way to the queue (marks.go).
	marks markBuffer

	// seqMu orders journal appends: a seq is assigned and its op enqueued
	// under it, so queue order is seq order and commits never leave a gap.
	seqMu   sync.Mutex
	nextSeq int64
	// assigned is nextSeq − 1, readable without seqMu (Assigned).
	assigned atomic.Int64
	// anyKilled is set once the store holds a kill record (killed.go):
	// until then Killed answers without a query.
	anyKilled atomic.Bool
	// callSeq is the last LLM call id handed out (AppendCall).
	callSeq atomic.Int64
	// dur is the committed high-water mark that WaitDurable waits on.
	dur  *durability
	done chan struct{} // closed when Close begins; stops sweepers

	sweepers sync.WaitGroup
	// sweepMu runs sweeps one at a time: a sweep reads the listeners'
	// cursors, then advances them.
	sweepMu sync.Mutex

	errMu     sync.Mutex
	asyncErrs []error
	asyncN    int

	counters counters
	// stmtCounts counts the writer's runs of each statement
	// (StatementCounts).
	stmtCounts *statementCounts

	// threads says which thread ids were never journaled (MayHaveThread).
	threads *threadFilter

	// sweepChunk is the number of rows one sweep transaction deletes.
	sweepChunk int
	// afterSweep, when set (tests), is called by sweepers after each sweep.
	afterSweep func(deleted int, err error)
}

// Open opens (creating if needed) the store in dir: it creates dir with mode
// 0700 (an existing one loses the group's and others' permissions), takes
// the exclusive directory lock, opens dir/xmlpipe.db — created 0600,
// tightened to it when it exists (PrepareDatabaseFile) — in WAL mode, runs
// the schema migrations and starts the writer goroutine.
func Open(dir string, opts Options) (*Store, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("store: data directory %q: %w", dir, err)
	}
	if err := PrepareDataDir(abs, opts.Logger); err != nil {
		return nil, err
	}
	lock, err := lockDir(abs)
	if err != nil {
		return nil, err
	}
	s := &Store{
		dir:        abs,
		opts:       opts,
		log:        opts.Logger,
		lock:       lock,
		queue:      make(chan *op, opts.QueueSize),
		wake:       make(chan struct{}, 1),
		done:       make(chan struct{}),
		sweepChunk: defaultSweepChunk,
	}
	s.marks.wake = make(chan struct{}, 1)
	if err := s.open(); err != nil {
		s.closeDBs()
		return nil, errors.Join(err, lock.unlock())
	}
	go s.w.run()
	s.loadThreadFilterInBackground()
	return s, nil
}

// open opens both pools, migrates and prepares the writer.
func (s *Store) open() error {
	ctx := context.Background()
	path := filepath.Join(s.dir, DatabaseFileName)
	if err := PrepareDatabaseFile(path, s.log); err != nil {
		return err
	}
	busy := strconv.FormatInt(s.opts.BusyTimeout.Milliseconds(), 10)
	uri := "file:" + (&url.URL{Path: path}).EscapedPath()

	// page_size takes effect only in a new database, and only before WAL
	// mode is set: the driver runs the _journal_mode shorthand after every
	// _pragma. 16 KiB pages take a quarter of the WAL and checkpoint system
	// calls of 4 KiB ones for the same journal bytes (BenchmarkJournalFlow).
	wdb, err := sql.Open("sqlite", uri+"?_pragma=busy_timeout("+busy+")"+
		"&_pragma=page_size(16384)&_journal_mode=WAL&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(1)&_txlock=immediate")
	if err != nil {
		return fmt.Errorf("store: open %s: %w", path, err)
	}
	s.wdb = wdb
	wdb.SetMaxOpenConns(1)
	wdb.SetMaxIdleConns(1)
	wdb.SetConnMaxLifetime(0)
	wdb.SetConnMaxIdleTime(0)
	var mode string
	if err := wdb.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
		return fmt.Errorf("store: open %s: %w", path, err)
	}
	if mode != "wal" {
		return fmt.Errorf("store: open %s: journal_mode is %q, want wal", path, mode)
	}
	if err := prepareSchema(ctx, wdb, s.dir, s.log); err != nil {
		return err
	}

	r, err := newReader(s.dir, path, int(s.opts.BusyTimeout.Milliseconds()), s.opts.ReadConns)
	if err != nil {
		return err
	}
	s.Reader, s.rdb = r, r.db
	if err := s.sizeThreadFilter(ctx); err != nil {
		return err
	}
	if err := s.loadAnyKilled(ctx); err != nil {
		return err
	}

	conn, err := wdb.Conn(ctx)
	if err != nil {
		return fmt.Errorf("store: writer connection: %w", err)
	}
	var next, calls int64
	if err := conn.QueryRowContext(ctx, `SELECT max(high_seq, coalesce((SELECT max(seq) FROM journal_rows), 0),
		coalesce((SELECT max(seq) FROM journal_tombstones), 0)) + 1, (SELECT coalesce(max(id), 0) FROM llm_calls)
		FROM journal_state`).Scan(&next, &calls); err != nil {
		conn.Close()
		return fmt.Errorf("store: read journal high-water mark: %w", err)
	}
	s.nextSeq = next
	s.assigned.Store(next - 1)
	s.callSeq.Store(calls)
	s.dur = newDurability(next - 1)
	deliveries, err := loadDeliveries(ctx, conn, next-1)
	var (
		names  journalNames
		routes journalRoutes
	)
	if err == nil {
		names, err = loadJournalNames(ctx, conn)
	}
	if err == nil {
		routes, err = loadJournalRoutes(ctx, conn)
	}
	conn.Close() // the writer takes the connection back from the pool below
	if err != nil {
		return err
	}
	if s.stmtCounts == nil {
		s.stmtCounts = newStatementCounts()
	}
	wc, err := newWriteConn(ctx, wdb, s.stmtCounts)
	if err != nil {
		return err
	}
	if s.ckpt, err = newCheckpointer(path, s.opts.BusyTimeout, s.log, s.opts.onCheckpoint); err != nil {
		wc.close() //nolint:errcheck // the open failed already
		return err
	}
	s.w = &writer{
		conn:      wc,
		queue:     s.queue,
		wake:      s.wake,
		marks:     &s.marks,
		requeue:   s.queue,
		done:      s.done,
		rows:      s.opts.BatchRows,
		delay:     s.opts.BatchDelay,
		linger:    s.opts.BatchLinger,
		gather:    s.opts.BusyGather,
		log:       s.log,
		counters:  &s.counters,
		onAsync:   s.recordAsync,
		onCommit:  s.opts.onCommit,
		dur:       s.dur,
		ckpt:      s.ckpt,
		ckptEvery: cmp.Or(s.opts.checkpointPages, checkpointPages),
		exited:    make(chan struct{}),
		batch:     make([]op, 0, s.opts.BatchRows),

		deliveries: deliveries,
		listeners:  newIDCache[sweepKey](&unbounded),
		names:      names,
		routes:     routes,
		keys:       newKeySummaries(next),
		high:       next - 1,
		txHigh:     next - 1,
		health:     newHealth(s.log, s.dir),
	}
	return nil
}

// Dir returns the absolute data directory.
func (s *Store) Dir() string { return s.dir }

// Stats returns a snapshot of the writer's counters.
func (s *Store) Stats() Stats {
	return Stats{
		Enqueued:       s.counters.enqueued.Load(),
		Committed:      s.counters.committed.Load(),
		Failed:         s.counters.failed.Load(),
		Commits:        s.counters.commits.Load(),
		Rollbacks:      s.counters.rollbacks.Load(),
		CommitTime:     time.Duration(s.counters.commitNanos.Load()),
		WALFrames:      s.counters.walFrames.Load(),
		Checkpoints:    s.ckpt.runs.Load(),
		CheckpointTime: time.Duration(s.ckpt.nanos.Load()),
	}
}

// enqueue hands o to the writer, blocking while the queue is full until ctx
// ends. It fails with ErrClosed after Close.
func (s *Store) enqueue(ctx context.Context, o *op) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	switch o.kind {
	case opAppend:
		return s.enqueueAppend(ctx, o)
	case opAppendGroup:
		return s.enqueueAppendGroup(ctx, o)
	}
	if err := s.send(ctx, o); err != nil {
		return err
	}
	if o.kind != opFlush {
		s.counters.enqueued.Add(1)
	}
	return nil
}

// sendMarks sends the buffered delivery marks on the queue as one op
// (Flush: they were made before it, so they enter the queue ahead of its
// flush op). It blocks while the queue is full until ctx ends, and then
// leaves them buffered.
func (s *Store) sendMarks(ctx context.Context) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	seqs := s.marks.take()
	if len(seqs) == 0 {
		return nil
	}
	if err := s.send(ctx, &op{kind: opMarks, name: "mark delivered", seqs: seqs}); err != nil {
		s.marks.putBack(seqs)
		return err
	}
	return nil
}

// enqueueAppend assigns o the next journal seq and enqueues it, both under
// seqMu, so queue order is seq order. A seq whose op never entered the queue
// is taken back. The caller holds s.mu.RLock.
func (s *Store) enqueueAppend(ctx context.Context, o *op) error {
	s.seqMu.Lock()
	defer s.seqMu.Unlock()
	o.entry.Seq = s.nextSeq
	if err := s.send(ctx, o); err != nil {
		o.entry.Seq = 0
		return err
	}
	s.nextSeq++
	s.assigned.Store(s.nextSeq - 1)
	s.counters.enqueued.Add(1)
	return nil
}

// enqueueAppendGroup is enqueueAppend for a group: its entries get
// consecutive seqs and travel to the writer as one op, so they are
// committed in one transaction. The caller holds s.mu.RLock.
func (s *Store) enqueueAppendGroup(ctx context.Context, o *op) error {
	s.seqMu.Lock()
	defer s.seqMu.Unlock()
	for i := range o.entries {
		o.entries[i].Seq = s.nextSeq + int64(i)
	}
	if err := s.send(ctx, o); err != nil {
		for i := range o.entries {
			o.entries[i].Seq = 0
		}
		return err
	}
	n := int64(len(o.entries))
	s.nextSeq += n
	s.assigned.Store(s.nextSeq - 1)
	s.counters.enqueued.Add(n)
	return nil
}

// send puts o on the queue, blocking while it is full until ctx ends, and
// nudges the writer. The caller holds s.mu.RLock.
func (s *Store) send(ctx context.Context, o *op) error {
	p := queued(o)
	if ctx.Done() == nil {
		s.queue <- p // a plain send: select costs several times more
	} else {
		select {
		case s.queue <- p:
		case <-ctx.Done():
			release(p)
			return ctx.Err()
		}
	}
	s.nudge(o)
	return nil
}

// nudge wakes the writer before its batch delay ends when o must not wait
// for it (a synchronous op or a flush) or a full batch is queued, and
// while it lingers (Options.BatchLinger) when o is told of its outcome
// (done), so that o waits for the batch delay at most. Other ops
// do not wake the writer: waking it for each of the hundreds of ops a batch
// gathers cost a goroutine hand-off per journaled envelope.
func (s *Store) nudge(o *op) {
	if o.reply != nil || len(s.queue) >= s.opts.BatchRows || (o.done != nil && s.dur.lingering.Load()) {
		select {
		case s.wake <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
}

// call enqueues a synchronous op and waits for its commit. If ctx ends first
// the write may still be committed later.
func (s *Store) call(ctx context.Context, o op) (int64, error) {
	o.reply = make(chan opResult, 1)
	if err := s.enqueue(ctx, &o); err != nil {
		return 0, err
	}
	select {
	case r := <-o.reply:
		return r.n, r.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// do runs fn in the writer as a synchronous op named name.
func (s *Store) do(ctx context.Context, name string, fn func(w *writer) (int64, error)) (int64, error) {
	return s.call(ctx, op{kind: opFunc, name: name, fn: fn})
}

// async enqueues fn as an asynchronous op named name.
func (s *Store) async(name string, fn func(w *writer) (int64, error)) error {
	return s.enqueue(context.Background(), &op{kind: opFunc, name: name, fn: fn})
}

// recordAsync logs and keeps the error of an asynchronous op for the next
// Flush or Close. It runs on the writer goroutine.
func (s *Store) recordAsync(o *op, err error) {
	if isStorageFailure(err) {
		// Logged once when the storage begins to fail (health.go); a
		// line per refused write would flood the log of a full disk.
		s.log.Debug("store: asynchronous write failed", "op", o.name, "err", err)
	} else {
		s.log.Error("store: asynchronous write failed", "op", o.name, "err", err)
	}
	s.errMu.Lock()
	defer s.errMu.Unlock()
	s.asyncN++
	if len(s.asyncErrs) < maxAsyncErrs {
		s.asyncErrs = append(s.asyncErrs, err)
	}
}

// takeAsyncErr returns and clears the recorded asynchronous errors.
func (s *Store) takeAsyncErr() error {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	if s.asyncN == 0 {
		return nil
	}
	err := fmt.Errorf("%w: %d write(s) failed: %w", ErrWriteFailed, s.asyncN, errors.Join(s.asyncErrs...))
	s.asyncErrs, s.asyncN = nil, 0
	return err
}

// Flush returns when every write enqueued before the call is committed (or
// failed, or held while the storage fails: Health().Held counts those,
// committed once it recovers or failed at Close). It returns the errors of
// asynchronous writes that failed since the previous Flush, wrapped in
// ErrWriteFailed.
func (s *Store) Flush(ctx context.Context) error {
	if err := s.sendMarks(ctx); err != nil {
		return err
	}
	if _, err := s.call(ctx, op{kind: opFlush, name: "flush"}); err != nil {
		return err
	}
	return s.takeAsyncErr()
}

// readable reports ErrClosed after Close.
func (s *Store) readable() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	return nil
}

// Close stops the sweepers, drains and commits the write queue, checkpoints
// the WAL into the database file, closes the database and releases the
// directory lock. It returns asynchronous write errors not yet returned by
// Flush. A second Close returns ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.closed = true
	close(s.done)
	s.marks.close() // the writer commits the buffered marks after the queue
	close(s.queue)
	s.mu.Unlock()

	s.sweepers.Wait()
	<-s.w.exited
	s.dur.close()
	errs := []error{s.takeAsyncErr()}
	// Stopped before the last checkpoint, which would wait for its one.
	if err := s.ckpt.close(); err != nil {
		errs = append(errs, fmt.Errorf("store: close the checkpoint connection: %w", err))
	}
	// The Reader's Close closes rdb; s.rdb stays set (closing a *sql.DB
	// again does nothing), so a read that passed readable() just before
	// Close gets the pool's "database is closed", never a nil pool.
	if err := s.Reader.Close(); err != nil && !errors.Is(err, ErrClosed) {
		errs = append(errs, err)
	}
	if _, err := s.w.conn.exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		errs = append(errs, fmt.Errorf("store: checkpoint: %w", err))
	}
	s.closeDBs()
	errs = append(errs, s.lock.unlock())
	return errors.Join(errs...)
}

// closeDBs closes the writer statements, connection and both pools, logging
// failures (the data is committed by then).
func (s *Store) closeDBs() {
	if s.w != nil {
		if err := s.w.close(); err != nil {
			s.log.Warn("store: close writer connection", "err", err)
		}
	}
	for _, db := range []*sql.DB{s.rdb, s.wdb} {
		if db != nil {
			if err := db.Close(); err != nil {
				s.log.Warn("store: close database", "err", err)
			}
		}
	}
}
