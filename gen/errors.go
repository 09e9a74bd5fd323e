package gen

import "errors"

// ErrUnsupported is wrapped by every Describe failure: a Go type, tag or name
// that has no XSD form (maps, interfaces, recursive types, name clashes, …).
var ErrUnsupported = errors.New("unsupported payload type")

// ErrInvalidListener is returned by WriteTree and CheckTree for a listener name
// that cannot be used as a directory name (empty, containing "/" or "..").
var ErrInvalidListener = errors.New("invalid listener name")

// ErrStale is returned by CheckTree when generated files are missing or differ
// from what the Go types produce.
var ErrStale = errors.New("stale: run go generate ./... to regenerate")

// describeError locates a Describe failure at a Go type and field path such as
// "Order.Items.Meta".
type describeError struct {
	path string
	msg  string
}

func (e *describeError) Error() string { return "gen: " + e.path + ": " + e.msg }

func (e *describeError) Unwrap() error { return ErrUnsupported }
