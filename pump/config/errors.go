package config

import (
	"cmp"
	"errors"
	"slices"
)

// ErrConfig is wrapped by every error this package returns.
var ErrConfig = errors.New("config")

// Error is one configuration problem, located in the file it comes from.
type Error struct {
	// Pos is where the problem is in the file (Line 0 when unknown).
	Pos Position
	// Path is the dotted key path of the offending value, e.g.
	// "listeners[1].payload_class"; empty for the document itself.
	Path string
	// Msg says what is wrong.
	Msg string
	// Err is the underlying cause, if any (e.g. an *fs.PathError).
	Err error
}

// Error formats the problem as "file:line: path: message".
func (e *Error) Error() string {
	s := e.Pos.String()
	if e.Path != "" {
		if s != "" {
			s += ": "
		}
		s += e.Path
	}
	if s != "" {
		s += ": "
	}
	return s + e.Msg
}

// Unwrap exposes ErrConfig and the underlying cause, if any.
func (e *Error) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrConfig, e.Err}
	}
	return []error{ErrConfig}
}

// joinErrors sorts problems by their place in the file (stable, so problems
// on one line keep the order they were found in) and joins them.
func joinErrors(errs []*Error) error {
	if len(errs) == 0 {
		return nil
	}
	slices.SortStableFunc(errs, func(a, b *Error) int {
		if c := cmp.Compare(a.Pos.Line, b.Pos.Line); c != 0 {
			return c
		}
		return cmp.Compare(a.Pos.Col, b.Pos.Col)
	})
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = e
	}
	return errors.Join(out...)
}
