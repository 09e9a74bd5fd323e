package store

import (
	"log/slog"
	"sync"
	"time"
)

// Health is what the store's writer last saw of its storage: whether its
// commits succeed, and since when and why not (storage_failure.go).
type Health struct {
	// OK is false from a commit that failed for a storage failure (a full
	// disk, an I/O error) until the next one that succeeds.
	OK bool
	// Error is that failure, as SQLite reported it ("" when OK).
	Error string
	// Since is when commits began to fail (zero when OK).
	Since time.Time
	// Held counts the writes held for the storage to recover: the durable
	// kernel state and delivery marks, committed once it does.
	Held int
	// Failures counts the storage failures since the store opened, and
	// Recovered when the last of them ended (zero before any did).
	Failures  int64
	Recovered time.Time
}

// health tracks Health for the writer and logs its changes: one line when
// commits begin to fail and one when they succeed again, not one per
// failed write.
type health struct {
	mu  sync.Mutex
	h   Health
	log *slog.Logger
	dir string
}

// newHealth starts healthy.
func newHealth(log *slog.Logger, dir string) *health {
	return &health{h: Health{OK: true}, log: log, dir: dir}
}

// failed records a storage failure err, with held writes waiting.
func (h *health) failed(err error, held int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.h.Held = held
	h.h.Error = err.Error()
	if !h.h.OK {
		return
	}
	h.h.OK = false
	h.h.Since = time.Now()
	h.h.Failures++
	h.log.Error("store: commits fail; journal appends are refused until the storage recovers",
		"dir", h.dir, "err", err)
}

// ok records a commit that succeeded.
func (h *health) ok() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.h.OK {
		return
	}
	now := time.Now()
	h.log.Warn("store: commits succeed again", "dir", h.dir, "failing_for", now.Sub(h.h.Since).Round(time.Millisecond).String(),
		"err", h.h.Error)
	h.h = Health{OK: true, Failures: h.h.Failures, Recovered: now}
}

// snapshot returns the current Health.
func (h *health) snapshot() Health {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.h
}

// Health reports whether the store's commits succeed, and since when and
// why not: a full disk shows here (and in the log, once) while the
// organism stays up and refuses what it cannot journal.
func (s *Store) Health() Health { return s.w.health.snapshot() }
