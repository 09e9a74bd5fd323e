package store

import "errors"

// ErrLocked reports that another Store (in this or another process) holds the
// data directory.
var ErrLocked = errors.New("store: data directory is locked")

// ErrClosed reports an operation on a closed Store.
var ErrClosed = errors.New("store: closed")

// ErrSchemaTooNew reports a database written by a newer xmlpipe whose schema
// this binary does not know.
var ErrSchemaTooNew = errors.New("store: database schema is newer than this binary supports")

// ErrSchemaOutdated reports a database whose schema needs a migration that a
// read-only open cannot apply (opening it with Open migrates it).
var ErrSchemaOutdated = errors.New("store: database schema is older than this binary reads; start the organism on it once (opening it read-write migrates it)")

// ErrUnreleasedLayout reports a database written by a development build of
// xmlpipe in a layout that was never released and that this binary does
// not migrate (unreleased_layouts.go).
var ErrUnreleasedLayout = errors.New("store: the database was written by a development build of xmlpipe")

// ErrNoDatabase reports a data directory that holds no store database.
var ErrNoDatabase = errors.New("store: no store database")

// ErrInvalid reports a row or argument that fails validation before it is
// enqueued.
var ErrInvalid = errors.New("store: invalid input")

// ErrNotFound reports a lookup or update of a row that does not exist.
var ErrNotFound = errors.New("store: not found")

// ErrWriteFailed wraps the errors of asynchronous writes returned by Flush
// and Close.
var ErrWriteFailed = errors.New("store: asynchronous write failed")
