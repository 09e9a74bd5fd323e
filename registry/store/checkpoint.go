package store

import (
	"database/sql"
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

// The writer runs the WAL checkpoints itself, after a batch is answered:
// SQLite's automatic checkpoint ran inside the COMMIT that crossed its
// threshold, so every caller waiting for that commit (durable acks,
// synchronous writes) also waited for the checkpoint's copying and its two
// fsyncs. The writer connection's automatic checkpoint is off
// (wal_autocheckpoint = 0 in writerPragmas); each commit counts the frames
// it appended (countFrames), and once ckptFrames have accumulated the
// writer checkpoints between two batches, on the same connection and with
// nothing of its own in the WAL to wait for, so the checkpoint copies every
// frame no reader still reads and the next transaction starts the WAL over:
// the WAL stays near ckptFrames frames, as with the automatic checkpoint.
// Close still checkpoints and truncates the WAL.

// checkpointDue reports whether the commits appended ckptFrames frames
// since the last checkpoint, or the last checkpoint found the WAL at least
// that long: a reader that was still reading older frames kept it from
// copying them all, or kept the writer from starting the WAL over after it
// had, so the writer tries again after each batch until the WAL is short,
// as SQLite's automatic checkpoint tries after each commit.
func (w *writer) checkpointDue() bool {
	return w.ckptFrames > 0 && (w.counters.walFrames.Load()-w.ckptMark >= w.ckptFrames || w.walLog >= w.ckptFrames)
}

// checkpoint runs a PASSIVE checkpoint on the writer's connection, between
// two of its transactions: it copies every frame no reader still needs and
// waits for nobody. A failure is logged; the next batch tries again.
func (w *writer) checkpoint() {
	start := time.Now()
	var busy, frames, copied int64
	w.counters.statements.Add(1)
	err := w.conn.query(`PRAGMA wal_checkpoint(PASSIVE)`, nil, func(rows *sql.Rows) error {
		return rows.Scan(&busy, &frames, &copied)
	})
	if err != nil {
		w.log.Warn("store: WAL checkpoint failed; the next batch tries again", "err", err)
		return
	}
	w.ckptMark = w.counters.walFrames.Load()
	w.walLog = frames
	w.counters.checkpoints.Add(1)
	w.counters.checkpointNanos.Add(int64(time.Since(start)))
}
