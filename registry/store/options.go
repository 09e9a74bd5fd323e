package store

import (
	"fmt"
	"log/slog"
	"time"
)

// Default values applied by Options.withDefaults.
const (
	// DefaultBatchRows is the default maximum number of operations per commit.
	// Large batches matter: every commit rewrites the last pages of the
	// journal's indexes, whatever the number of rows it adds.
	DefaultBatchRows = 4096
	// DefaultBatchDelay is the default time the writer waits to fill a batch.
	DefaultBatchDelay = 10 * time.Millisecond
	// DefaultBatchLinger is the default time the writer gathers a batch that
	// nobody waits for (Options.BatchLinger).
	DefaultBatchLinger = 25 * time.Millisecond
	// DefaultBusyGather is the default time the writer gathers a batch a
	// durability waiter hurries while operations keep arriving
	// (Options.BusyGather).
	DefaultBusyGather = time.Millisecond
	// DefaultQueueSize is the default capacity of the write queue: room for
	// what arrives while a few full batches commit.
	DefaultQueueSize = 4 * DefaultBatchRows
	// DefaultBusyTimeout is the default SQLite busy_timeout.
	DefaultBusyTimeout = 10 * time.Second
	// DefaultReadConns is the default size of the read-only connection pool.
	DefaultReadConns = 4
)

// Options configures a Store. The zero value is valid: every zero field takes
// its default.
type Options struct {
	// BatchRows is the maximum number of write operations committed in one
	// transaction (default 4096).
	BatchRows int `yaml:"batch_rows"`
	// BatchDelay is how long the writer waits after the first operation of a
	// batch for more to arrive before committing (default 10ms). Synchronous
	// operations (AppendSync, Flush, Sweep, users, sessions) commit at once.
	BatchDelay time.Duration `yaml:"batch_delay"`
	// BatchLinger is how long the writer gathers a batch that nobody waits
	// for (default 25ms): once BatchDelay has passed it goes on gathering
	// until BatchLinger has, unless a synchronous operation, a WaitDurable
	// or WaitCommitted caller or an operation told of its outcome
	// (extension writes) waits for the batch, which then commits at once
	// (doc.go measures it). A value at or below BatchDelay turns lingering
	// off.
	BatchLinger time.Duration `yaml:"batch_linger"`
	// BusyGather is how long the writer gathers a batch that a WaitDurable
	// caller hurries when the previous commit left operations queued
	// (default 1ms; negative: never; doc.go measures it). Such a batch
	// otherwise commits at once. A lone waiter, whose commit leaves nothing
	// queued, is never held.
	BusyGather time.Duration `yaml:"busy_gather"`
	// QueueSize is the capacity of the bounded write queue; enqueueing blocks
	// when it is full (default 16384).
	QueueSize int `yaml:"queue_size"`
	// BusyTimeout is SQLite's busy_timeout for every connection (default 10s).
	BusyTimeout time.Duration `yaml:"busy_timeout"`
	// ReadConns is the size of the read-only connection pool (default 4).
	ReadConns int `yaml:"read_conns"`
	// Clock returns the current time; it stamps entries without a time and
	// drives retention. Defaults to time.Now.
	Clock func() time.Time `yaml:"-"`
	// Logger receives write errors and sweep results. Defaults to
	// slog.Default().
	Logger *slog.Logger `yaml:"-"`

	// onCommit, set by tests, is called by the writer after each commit with
	// the number of operations it committed.
	onCommit func(ops int)
	// checkpointPages, set by tests, replaces checkpointPages (the WAL
	// pages between two checkpoints beside the writer); onCheckpoint is
	// told of each such checkpoint (checkpointer.onRun).
	checkpointPages int64
	onCheckpoint    func(walPages, copied int, err error)
}

// Validate reports negative or otherwise unusable values.
func (o Options) Validate() error {
	switch {
	case o.BatchRows < 0:
		return fmt.Errorf("%w: batch_rows %d is negative", ErrInvalid, o.BatchRows)
	case o.BatchDelay < 0:
		return fmt.Errorf("%w: batch_delay %s is negative", ErrInvalid, o.BatchDelay)
	case o.BatchLinger < 0:
		return fmt.Errorf("%w: batch_linger %s is negative", ErrInvalid, o.BatchLinger)
	case o.QueueSize < 0:
		return fmt.Errorf("%w: queue_size %d is negative", ErrInvalid, o.QueueSize)
	case o.BusyTimeout < 0:
		return fmt.Errorf("%w: busy_timeout %s is negative", ErrInvalid, o.BusyTimeout)
	case o.ReadConns < 0:
		return fmt.Errorf("%w: read_conns %d is negative", ErrInvalid, o.ReadConns)
	}
	return nil
}

// withDefaults returns o with every zero field set to its default.
func (o Options) withDefaults() Options {
	if o.BatchRows == 0 {
		o.BatchRows = DefaultBatchRows
	}
	if o.BatchDelay == 0 {
		o.BatchDelay = DefaultBatchDelay
	}
	if o.BatchLinger == 0 {
		o.BatchLinger = DefaultBatchLinger
	}
	if o.BusyGather == 0 {
		o.BusyGather = DefaultBusyGather
	}
	if o.QueueSize == 0 {
		o.QueueSize = DefaultQueueSize
	}
	if o.BusyTimeout == 0 {
		o.BusyTimeout = DefaultBusyTimeout
	}
	if o.ReadConns == 0 {
		o.ReadConns = DefaultReadConns
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}
