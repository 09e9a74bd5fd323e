package store

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
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
	// failing is Failing's answer, read without the lock on every
	// external message the pump is offered: nil while commits succeed.
	failing atomic.Pointer[StorageFailure]
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
	h.failing.Store(&StorageFailure{Class: classOf(err), Err: err})
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
	h.failing.Store(nil)
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

// ErrStorageFailing is matched by a StorageFailure: the store's commits
// fail for its storage (a full disk, an I/O error).
var ErrStorageFailing = errors.New("store: commits fail")

// StorageFailure is why the store's commits fail now (Store.Failing).
type StorageFailure struct {
	// Class names the failure for a person: "disk full" or "storage I/O
	// error".
	Class string
	// Err is the failure as SQLite reported it.
	Err error
}

// Error is the class and SQLite's text: "disk full: database or disk is
// full (13)".
func (f *StorageFailure) Error() string { return fmt.Sprintf("%s: %v", f.Class, f.Err) }

// Is makes a StorageFailure match ErrStorageFailing.
func (f *StorageFailure) Is(target error) bool { return target == ErrStorageFailing }

// Unwrap returns SQLite's error.
func (f *StorageFailure) Unwrap() error { return f.Err }

// classOf names a storage failure (isStorageFailure) for a person.
func classOf(err error) string {
	var c interface{ Code() int }
	if errors.As(err, &c) && c.Code()&0xff == sqliteFull {
		return "disk full"
	}
	return "storage I/O error"
}

// Failing returns why the store's commits fail now — a *StorageFailure
// (ErrStorageFailing) from the first commit that failed for its storage
// until one succeeds again — and nil while they succeed. It takes no
// lock (one atomic load): the organism asks it for every message offered
// to it, and refuses new ones while it is not nil.
func (s *Store) Failing() error {
	if f := s.w.health.failing.Load(); f != nil {
		return f
	}
	return nil
}
