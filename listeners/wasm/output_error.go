package wasm

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// maxQuoted bounds how much of a guest's output an error quotes.
const maxQuoted = 80

// notUTF8 is the error of output that is not UTF-8, or nil: the first bad
// byte and its offset, and what the guest must write instead. The parser
// would replace such bytes and report a repair; the guest's author needs
// to know their output is not text the pump takes.
func notUTF8(out []byte, want string) error {
	if utf8.Valid(out) {
		return nil
	}
	off := 0
	for off < len(out) {
		r, n := utf8.DecodeRune(out[off:])
		if r == utf8.RuneError && n <= 1 {
			break
		}
		off += n
	}
	return fmt.Errorf("%w: the output is not UTF-8 (byte 0x%02x at offset %d): want UTF-8 XML: one <%s> element",
		ErrBadOutput, out[off], off, want)
}

// noOneElement is the error of output holding no element of its own or
// more than one (parts): what came — nothing, JSON, text, several
// elements — beside the one <want> element expected.
func noOneElement(out []byte, parts []stage.RawPayload, want string) error {
	trimmed := bytes.TrimSpace(out)
	switch {
	case len(parts) > 1:
		names := make([]string, len(parts))
		for i, p := range parts {
			names[i] = "<" + p.Name + ">"
		}
		if len(names) > 5 {
			names = append(names[:5], "…")
		}
		return fmt.Errorf("%w: want one <%s> element, the guest wrote %d: %s", ErrBadOutput, want, len(parts),
			strings.Join(names, ", "))
	case len(trimmed) == 0:
		return fmt.Errorf("%w: the guest wrote nothing: want one <%s> element", ErrBadOutput, want)
	case trimmed[0] == '{' || trimmed[0] == '[':
		return fmt.Errorf("%w: the guest wrote JSON, not XML: want one <%s> element, got %s", ErrBadOutput, want,
			clipped(trimmed))
	default:
		return fmt.Errorf("%w: the guest wrote no XML element: want one <%s> element, got %s", ErrBadOutput, want,
			strconv.Quote(string(clipped(trimmed))))
	}
}

// clipped is b cut to maxQuoted bytes (at a rune boundary), with an
// ellipsis when cut.
func clipped(b []byte) []byte {
	if len(b) <= maxQuoted {
		return b
	}
	n := maxQuoted
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return append(b[:n:n], "…"...)
}
