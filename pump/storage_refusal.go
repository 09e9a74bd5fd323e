package pump

import (
	"errors"
	"time"
)

// Storage is what the pump asks, before it takes a new external message,
// of the storage its journal and kernel state are written to (the
// organism's store: Store.Failing). While Failing returns an error the
// pump refuses new external messages up front, before anything of them
// is read: a message it could not journal would otherwise be handled —
// its answer sent, its tools run — and then told to its sender as lost.
type Storage interface {
	// Failing returns why the storage cannot commit now (a full disk) and
	// nil while it can. It is called for every external message offered
	// to the pump, so it must be cheap (an atomic load, no lock).
	Failing() error
}

// ErrCannotJournal is matched by a *StorageRefusal: a new external
// message refused because the organism's storage cannot commit now.
var ErrCannotJournal = errors.New("pump: cannot journal messages now")

// storageRetryAfter is the retry hint of a StorageRefusal: the storage
// recovers when an operator frees room, which no measure here predicts;
// the store itself retries its held writes every 250 ms.
const storageRetryAfter = 5 * time.Second

// StorageRefusal refuses a new external message while the organism's
// storage cannot commit (Options.Storage): nothing of the message was
// read, kept or handled, and the sender may send it again once the
// storage recovers. It matches ErrCannotJournal and wraps the storage's
// error.
type StorageRefusal struct {
	// Err is the storage's error ("disk full: database or disk is full").
	Err error
	// RetryAfter is a hint of when to try again (whole seconds).
	RetryAfter time.Duration
}

// Text is the refusal as a sender reads it: "the organism cannot journal
// messages now (disk full: …); nothing was done; retry later".
func (e *StorageRefusal) Text() string {
	why := ""
	if e.Err != nil {
		why = " (" + e.Err.Error() + ")"
	}
	return "the organism cannot journal messages now" + why + "; nothing was done; retry later"
}

// Error is Text with the pump's prefix.
func (e *StorageRefusal) Error() string { return "pump: " + e.Text() }

// Is makes a StorageRefusal match ErrCannotJournal.
func (e *StorageRefusal) Is(target error) bool { return target == ErrCannotJournal }

// Unwrap returns the storage's error.
func (e *StorageRefusal) Unwrap() error { return e.Err }

// storageRefusal returns the *StorageRefusal of a new external message
// while Options.Storage fails, nil otherwise (and without a Storage): one
// interface call and an atomic load on the hot path.
func (p *Pump) storageRefusal() error {
	if p.opts.Storage == nil {
		return nil
	}
	err := p.opts.Storage.Failing()
	if err == nil {
		return nil
	}
	return &StorageRefusal{Err: err, RetryAfter: storageRetryAfter}
}
