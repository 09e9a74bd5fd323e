package codec

import (
	"errors"
	"slices"
	"strings"
)

// ErrDecode is wrapped by every Decode error; the error text names the element
// path (for example "Order/Items/Item[2]/Count").
var ErrDecode = errors.New("cannot decode payload")

// ErrEncode is wrapped by every Append error.
var ErrEncode = errors.New("codec: cannot encode payload")

// pathError is a decode failure located at an element path. The path is built
// innermost first while the recursive decoder unwinds.
type pathError struct {
	rev   []string // path segments, innermost first
	msg   string
	cause error
}

// Error renders "codec: decode A/B/C: msg[: cause]".
func (e *pathError) Error() string {
	path := slices.Clone(e.rev)
	slices.Reverse(path)
	var b strings.Builder
	b.WriteString("codec: decode ")
	b.WriteString(strings.Join(path, "/"))
	b.WriteString(": ")
	b.WriteString(e.msg)
	if e.cause != nil {
		b.WriteString(": ")
		b.WriteString(e.cause.Error())
	}
	return b.String()
}

// Unwrap returns ErrDecode and the underlying cause, if any.
func (e *pathError) Unwrap() []error {
	if e.cause != nil {
		return []error{ErrDecode, e.cause}
	}
	return []error{ErrDecode}
}

// decodeErr starts a pathError with no path yet.
func decodeErr(msg string, cause error) error {
	return &pathError{msg: msg, cause: cause}
}

// atPath adds the element segment (outer to what is already there) to a
// pathError; other errors pass through unchanged.
func atPath(err error, segment string) error {
	if pe, ok := err.(*pathError); ok {
		pe.rev = append(pe.rev, segment)
	}
	return err
}
