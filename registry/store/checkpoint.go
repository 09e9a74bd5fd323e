package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"
)

// defaultCheckpointFrames is how many WAL frames the writer's commits
// append between two checkpoints: 4096 pages, a WAL of 64 MiB with 16 KiB
// pages (SQLite's automatic checkpoint ran every 1000). A checkpoint writes
// each page the WAL holds once, however many frames hold it, and the kernel
// tables' key indexes (random UUID keys) are rewritten commit after commit:
// four times the interval cut BenchmarkKernelFlow's CPU per reply by ~10 %
// (8192 frames: ~19 %), at the price of a larger WAL file.
const defaultCheckpointFrames = 4096

// Checkpoints run beside the writer, not in its commits. SQLite's automatic
// checkpoint ran inside the COMMIT that crossed its threshold, so every
// caller waiting for that commit (durable acks, synchronous writes) also
// waited for the checkpoint's copying and its two fsyncs. The writer
// connection's automatic checkpoint is off (wal_autocheckpoint = 0 in
// writerPragmas); each commit counts the frames it appended (countFrames),
// and each ckptFrames of them the writer kicks the checkpointer, whose
// PASSIVE checkpoint, on a connection of its own, copies the WAL into the
// database file while the writer goes on committing (WAL mode lets a
// checkpoint and a writer run at once).
//
// SQLite starts the WAL over from its beginning only once a checkpoint has
// copied every frame, and while commits keep coming each background
// checkpoint ends with newer frames in the WAL than it copied: left alone
// the WAL would grow as long as the load lasts. So after each background
// checkpoint the writer catches up between two batches (catchUp): a
// PASSIVE checkpoint on its own connection, with nothing of its own under
// way, copies the few frames appended meanwhile, and its next transaction
// starts the WAL over. The writer's pause is that remainder, not the whole
// WAL. Should a reader still read older frames, the catch-up cannot copy
// them all, and the writer catches up again after each batch until it
// can; or it keeps the writer from starting the WAL over, which the next
// background checkpoint's catch-up tries again. Close still checkpoints and
// truncates the WAL.

// checkpointer runs the background checkpoints on a connection of its own.
type checkpointer struct {
	db       *sql.DB
	conn     *sql.Conn
	kick     chan struct{}
	stop     chan struct{}
	exited   chan struct{}
	log      *slog.Logger
	counters *counters
	started  bool
	// copied is set when a checkpoint ended: the writer catches up.
	copied atomic.Bool
}

// newCheckpointer opens the checkpointer's connection to the database at
// uri, which must carry the writer's busy timeout and synchronous=NORMAL
// (a checkpoint then syncs the WAL before it copies and the database
// after).
func newCheckpointer(ctx context.Context, uri string, log *slog.Logger, c *counters) (*checkpointer, error) {
	db, err := sql.Open("sqlite", uri)
	if err != nil {
		return nil, fmt.Errorf("store: checkpointer: %w", err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("store: checkpointer connection: %w", err)
	}
	return &checkpointer{db: db, conn: conn, kick: make(chan struct{}, 1), stop: make(chan struct{}),
		exited: make(chan struct{}), log: log, counters: c}, nil
}

// start starts the checkpointer's goroutine.
func (c *checkpointer) start() {
	c.started = true
	go c.run()
}

// run checkpoints once per kick until stop is closed.
func (c *checkpointer) run() {
	defer close(c.exited)
	for {
		select {
		case <-c.stop:
			return
		case <-c.kick:
			start := time.Now()
			if _, _, err := passiveCheckpoint(c.conn.QueryRowContext(context.Background(),
				`PRAGMA wal_checkpoint(PASSIVE)`)); err != nil {
				c.log.Warn("store: WAL checkpoint failed; the next one tries again", "err", err)
				continue
			}
			c.counters.checkpoints.Add(1)
			c.counters.checkpointNanos.Add(int64(time.Since(start)))
			c.copied.Store(true)
		}
	}
}

// request asks for a checkpoint without waiting: one already pending
// covers this request too.
func (c *checkpointer) request() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// close stops the checkpointer, waits for a checkpoint under way and closes
// its connection.
func (c *checkpointer) close() error {
	close(c.stop)
	if c.started {
		<-c.exited
	}
	if err := errors.Join(c.conn.Close(), c.db.Close()); err != nil {
		return fmt.Errorf("store: close checkpointer: %w", err)
	}
	return nil
}

// errCheckpointBusy reports a checkpoint that found another under way.
var errCheckpointBusy = errors.New("store: another checkpoint is under way")

// passiveCheckpoint scans the row of PRAGMA wal_checkpoint(PASSIVE): the
// frames in the WAL and how many of them are copied into the database.
func passiveCheckpoint(row interface{ Scan(...any) error }) (frames, copied int64, err error) {
	var busy int64
	if err := row.Scan(&busy, &frames, &copied); err != nil {
		return 0, 0, err
	}
	if busy != 0 {
		return frames, copied, errCheckpointBusy
	}
	return frames, copied, nil
}

// countFrames records the WAL frames written so far and kicks the
// checkpointer each ckptFrames of them. A failure to read them only leaves
// the statistic (and the checkpoint) behind.
func (w *writer) countFrames() {
	n, err := w.conn.pagesWritten()
	if err != nil {
		return
	}
	w.counters.walFrames.Store(n)
	if w.ckpt != nil && n-w.ckptMark >= w.ckptFrames {
		w.ckptMark = n
		w.ckpt.request()
	}
}

// catchUpDue reports whether the writer should catch up after this batch:
// a background checkpoint ended since the last catch-up, or the last
// catch-up could not copy every frame (a reader still read older ones).
func (w *writer) catchUpDue() bool {
	if w.ckpt == nil {
		return false
	}
	return w.ckpt.copied.Load() || w.walLeft > 0
}

// catchUp runs a PASSIVE checkpoint on the writer's connection between two
// of its transactions (see above). A failure or a background checkpoint
// under way leaves it to the next batch.
func (w *writer) catchUp() {
	start := time.Now()
	w.counters.statements.Add(1)
	var frames, copied int64
	err := w.conn.query(`PRAGMA wal_checkpoint(PASSIVE)`, nil, func(rows *sql.Rows) error {
		var err error
		frames, copied, err = passiveCheckpoint(rows)
		return err
	})
	if errors.Is(err, errCheckpointBusy) {
		return
	}
	if err != nil {
		w.log.Warn("store: WAL catch-up checkpoint failed; the next batch tries again", "err", err)
		return
	}
	w.ckpt.copied.Store(false)
	w.walLog, w.walLeft = frames, frames-copied
	w.counters.catchUps.Add(1)
	w.counters.catchUpNanos.Add(int64(time.Since(start)))
}
