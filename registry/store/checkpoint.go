package store

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"
)

// Checkpoints copy the WAL's pages into the database file so that the WAL
// can start again from its beginning. SQLite runs them on the connection
// that commits, right after the commit that crosses wal_autocheckpoint: the
// writer then stops for the whole copy (16 MiB of 16 KiB pages, with the
// fsyncs of the WAL and of the database file), and with it every write and
// every durability waiter queued behind it. On this project's 2-core test
// machine that was the p99 of a sequential federated call (13.7-16.8 ms
// against 2.6 ms with checkpoints off, `xmlpipe bench --federation`).
//
// So the store checkpoints on a goroutine and connection of its own: the
// writer wakes the checkpointer once every checkpointPages WAL pages it
// has written, and the checkpointer runs PASSIVE checkpoints, which copy
// what is committed without blocking the writer (or readers), in passes
// over what the writer added during the previous one (checkpoint). The
// WAL starts again from its beginning only when the writer begins a
// transaction with every frame copied, which a writer that commits while
// the checkpoint runs never does: so once the last pass has copied the WAL
// as of its start, the writer, before its next transaction, copies the
// pages it committed meanwhile itself (writer.catchUp) — none when it was
// idle, a few dozen under load, and the two fsyncs of a checkpoint.
// Without that the WAL grew to the writer's own automatic checkpoint
// (wal_autocheckpoint, at autoCheckpointPages), which stays as the
// backstop when the checkpointer cannot keep up.

// checkpointPages is how many WAL pages the writer writes between two
// wake-ups of the checkpointer: SQLite's default wal_autocheckpoint.
const checkpointPages = 1000

// autoCheckpointPages is the writer connection's wal_autocheckpoint: the
// WAL size at which the writer checkpoints itself when the checkpointer
// could not bring the WAL back to its beginning (64 MiB of 16 KiB pages).
const autoCheckpointPages = 4 * checkpointPages

// The checkpointer's states (checkpointer.state).
const (
	ckptIdle int32 = iota
	ckptRunning
	ckptCopied
)

// checkpointer runs PASSIVE checkpoints on a connection of its own when
// the writer asks for one.
type checkpointer struct {
	db     *sql.DB
	log    *slog.Logger
	wake   chan struct{}
	stop   chan struct{}
	exited chan struct{}
	// runs counts the checkpoint passes run and nanos the time they took
	// (Stats.Checkpoints, Stats.CheckpointTime).
	runs, nanos atomic.Int64
	// state is ckptIdle, ckptRunning (requested or under way) or
	// ckptCopied: the last checkpoint copied the whole WAL as of its start,
	// and the writer is to copy what it committed meanwhile
	// (writer.catchUp) so that its next transaction starts the WAL again.
	// The writer requests a checkpoint only when idle, and catches up only
	// when copied: never while the checkpointer runs, whose checkpoint
	// would make its own fail as busy.
	state atomic.Int32
	// onRun, set by tests, is told of each checkpoint: the WAL's pages and
	// how many of them are copied into the database file.
	onRun func(walPages, copied int, err error)
}

// newCheckpointer opens the checkpointer's connection to the database at
// path (a WAL database the writer has opened) and starts its goroutine.
func newCheckpointer(path string, busy time.Duration, log *slog.Logger,
	onRun func(walPages, copied int, err error)) (*checkpointer, error) {
	uri := "file:" + (&url.URL{Path: path}).EscapedPath() + "?_pragma=busy_timeout(" +
		strconv.FormatInt(busy.Milliseconds(), 10) + ")&_pragma=synchronous(NORMAL)"
	db, err := sql.Open("sqlite", uri)
	if err != nil {
		return nil, fmt.Errorf("store: open %s for checkpoints: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	if err := db.PingContext(context.Background()); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: open %s for checkpoints: %w", path, err)
	}
	c := &checkpointer{db: db, log: log, wake: make(chan struct{}, 1), stop: make(chan struct{}),
		exited: make(chan struct{}), onRun: onRun}
	go c.run()
	return c, nil
}

// request asks for a checkpoint without waiting, unless one is requested
// or under way, or the writer has yet to catch up with the last one; it
// reports whether it asked.
func (c *checkpointer) request() bool {
	if !c.state.CompareAndSwap(ckptIdle, ckptRunning) {
		return false
	}
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return true
}

// run checkpoints at each request until close.
func (c *checkpointer) run() {
	defer close(c.exited)
	for {
		select {
		case <-c.stop:
			return
		case <-c.wake:
		}
		c.state.Store(c.checkpoint())
	}
}

// catchUpPages is how many WAL pages the writer may be left to copy
// itself (writer.catchUp): a pass of the checkpointer that finds at most
// that many pages added since its previous pass ends the checkpoint.
const catchUpPages = 64

// maxCheckpointPasses bounds the passes of one checkpoint, for a writer
// that adds pages as fast as they are copied.
const maxCheckpointPasses = 8

// checkpoint copies the WAL into the database file in passes: each pass
// copies what the writer committed during the previous one, so that the
// pages left for the writer's catch-up are few (a pass copying ~1,000
// pages took long enough under a bus load for the writer to add ~400,
// whose copy then stopped it for 3 ms at the median, 10-15 at the
// worst). It returns the state to leave: ckptCopied when the last pass
// copied the whole WAL as of its start, else ckptIdle.
func (c *checkpointer) checkpoint() int32 {
	prev := -1
	for pass := 1; ; pass++ {
		start := time.Now()
		var busy, logPages, copied int
		err := c.db.QueryRowContext(context.Background(), `PRAGMA wal_checkpoint(PASSIVE)`).
			Scan(&busy, &logPages, &copied)
		c.runs.Add(1)
		c.nanos.Add(int64(time.Since(start)))
		if err != nil {
			// The writer's automatic checkpoint bounds the WAL meanwhile.
			c.log.Warn("store: checkpoint", "err", err)
		}
		if c.onRun != nil {
			c.onRun(logPages, copied, err)
		}
		switch {
		case err != nil || busy != 0 || copied != logPages:
			return ckptIdle
		case logPages == 0:
			return ckptIdle // the WAL started again meanwhile
		case prev >= 0 && logPages-prev <= catchUpPages, logPages < prev, pass == maxCheckpointPasses:
			return ckptCopied
		}
		prev = logPages
	}
}

// close stops the goroutine, waiting for a checkpoint under way, and
// closes the connection.
func (c *checkpointer) close() error {
	close(c.stop)
	<-c.exited
	return c.db.Close()
}
