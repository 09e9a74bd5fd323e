package tools

import (
	"strings"
	"unicode/utf8"
)

// Text makes b safe to carry in an XML payload: invalid UTF-8 and the
// characters XML 1.0 cannot represent become U+FFFD.
func Text(b []byte) string {
	var sb strings.Builder
	sb.Grow(len(b))
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		b = b[n:]
		if !IsXMLChar(r) || r == utf8.RuneError && n == 1 {
			r = utf8.RuneError
		}
		sb.WriteRune(r)
	}
	return sb.String()
}

// IsXMLChar reports whether r may appear in XML 1.0 text.
func IsXMLChar(r rune) bool {
	return r == 0x9 || r == 0xA || r == 0xD || r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD ||
		r >= 0x10000 && r <= 0x10FFFF
}

// IsText reports whether b is UTF-8 text XML can carry unchanged.
func IsText(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if !IsXMLChar(r) {
			return false
		}
	}
	return true
}

// CarriedSize bounds the bytes s takes in a tool's answer, carried either
// as XML character data or inside the JSON text an agent gets (which is XML
// character data in turn): the larger of the two escapes of each character
// (<, >, & and U+2028/U+2029 six bytes, \r five, ", \, tab and newline two),
// any other character its UTF-8 length.
func CarriedSize(s string) int {
	n := 0
	for _, r := range s {
		switch r {
		case '<', '>', '&', '\u2028', '\u2029':
			n += 6
		case '\r':
			n += 5
		case '"', '\\', '\t', '\n':
			n += 2
		default:
			if r < 0x20 {
				n += 6 // \u00XX in JSON
			} else {
				n += utf8.RuneLen(r)
			}
		}
	}
	return n
}

// CutCarried returns s cut (on a character boundary) to what fits in max
// bytes as an answer carries it (CarriedSize), and whether it cut anything.
func CutCarried(s string, max int) (string, bool) {
	n := 0
	for i, r := range s {
		if n += CarriedSize(string(r)); n > max {
			return s[:i], true
		}
	}
	return s, false
}
