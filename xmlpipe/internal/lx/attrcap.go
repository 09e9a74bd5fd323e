package lx

import (
	"bytes"
	"errors"
	"fmt"
)

// MaxAttributes bounds the attributes of one element, namespace
// declarations included. libxml2 2.9 checks a start tag's attributes for
// duplicates pair by pair, and its C14N sorts them by insertion, so an
// element's cost grows with the square of their number: one envelope of
// 870 KB — under the 1 MiB size cap — whose payload element carried 80 000
// attributes held an ingress worker for 42 s. No payload the organism
// derives from a Go type comes near the bound.
const MaxAttributes = 256

// ErrTooManyAttributes is the diagnostic of a document refused because one
// of its elements has more than MaxAttributes attributes.
var ErrTooManyAttributes = errors.New("lx: too many attributes on one element")

// tooManyAttributes returns the byte offset of the first start tag in b with
// more than limit attributes, or -1. It counts quoted values, one per
// attribute, and skips comments, CDATA sections, processing instructions and
// declarations, in one pass over b. It reads bytes only: on a document that
// is not well-formed it may count text after a stray '<', and refuses it only
// if that text holds more than limit quoted strings before the next '<' or '>'.
func tooManyAttributes(b []byte, limit int) int {
	const tagStops = `"'<>`
	for i := 0; i < len(b); {
		j := bytes.IndexByte(b[i:], '<')
		if j < 0 {
			return -1
		}
		start := i + j
		i = start + 1
		if i >= len(b) {
			return -1
		}
		switch b[i] {
		case '!', '?':
			end := []byte(">")
			switch {
			case b[i] == '?':
				end = []byte("?>")
			case bytes.HasPrefix(b[i:], []byte("!--")):
				end = []byte("-->")
			case bytes.HasPrefix(b[i:], []byte("![CDATA[")):
				end = []byte("]]>")
			}
			k := bytes.Index(b[i:], end)
			if k < 0 {
				return -1
			}
			i += k + len(end)
		case '/':
		default:
			n := 0
			for {
				k := bytes.IndexAny(b[i:], tagStops)
				if k < 0 {
					return -1
				}
				i += k
				q := b[i]
				if q == '>' || q == '<' {
					break
				}
				k = bytes.IndexByte(b[i+1:], q)
				if k < 0 {
					return -1
				}
				i += k + 2
				if n++; n > limit {
					return start
				}
			}
		}
	}
	return -1
}

// attributeCapError is the diagnostic list for a start tag at off with too
// many attributes.
func attributeCapError(b []byte, off int) *Errors {
	line := bytes.Count(b[:off], []byte("\n")) + 1
	col := off - bytes.LastIndexByte(b[:off], '\n')
	return &Errors{List: []Error{{Level: LevelFatal, Line: line, Col: col,
		Msg: fmt.Sprintf("%v: more than %d", ErrTooManyAttributes, MaxAttributes)}}}
}
