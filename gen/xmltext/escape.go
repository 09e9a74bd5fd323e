// Package xmltext escapes Go strings into XML 1.0 character data and attribute
// values. The output is always well-formed: markup characters become entity or
// character references, and anything that is not an XML character (invalid
// UTF-8, C0 controls other than tab/newline/carriage return, surrogates,
// U+FFFE, U+FFFF) is replaced by U+FFFD.
package xmltext

import "unicode/utf8"

// replacement is U+FFFD in UTF-8, written for every non-XML character.
const replacement = "\uFFFD"

// AppendText appends s escaped as element character data: & < > become entity
// references and a carriage return becomes &#xD; so that it survives parsing
// (parsers turn a literal CR into LF).
func AppendText(dst []byte, s string) []byte {
	return appendEscaped(dst, s, false)
}

// AppendAttr appends s escaped for a double-quoted attribute value: & < > "
// become entity references and tab, newline and carriage return become
// character references so that attribute-value normalisation keeps them.
func AppendAttr(dst []byte, s string) []byte {
	return appendEscaped(dst, s, true)
}

// IsChar reports whether r is allowed in an XML 1.0 document (the Char production).
func IsChar(r rune) bool {
	switch {
	case r >= 0x20 && r <= 0xD7FF:
		return true
	case r == 0x9 || r == 0xA || r == 0xD:
		return true
	case r >= 0xE000 && r <= 0xFFFD:
		return true
	case r >= 0x10000 && r <= 0x10FFFF:
		return true
	}
	return false
}

// plain[mode][c] is true for the ASCII bytes written as they are: in text
// (mode 0) and in attribute values (mode 1). Runs of them are copied in bulk.
var plain = func() (t [2][utf8.RuneSelf]bool) {
	for c := byte(0x20); c < utf8.RuneSelf; c++ {
		t[0][c] = c != '&' && c != '<' && c != '>'
		t[1][c] = t[0][c] && c != '"'
	}
	t[0]['\t'], t[0]['\n'] = true, true
	return t
}()

func appendEscaped(dst []byte, s string, attr bool) []byte {
	safe := &plain[0]
	if attr {
		safe = &plain[1]
	}
	last := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf && safe[c] {
			i++
			continue
		}
		var esc string
		width := 1
		if c < utf8.RuneSelf {
			switch c {
			case '&':
				esc = "&amp;"
			case '<':
				esc = "&lt;"
			case '>':
				esc = "&gt;"
			case '\r':
				esc = "&#xD;"
			case '"':
				if attr {
					esc = "&quot;"
				}
			case '\t':
				if attr {
					esc = "&#x9;"
				}
			case '\n':
				if attr {
					esc = "&#xA;"
				}
			default:
				if c < 0x20 {
					esc = replacement
				}
			}
		} else {
			r, n := utf8.DecodeRuneInString(s[i:])
			width = n
			if (r == utf8.RuneError && n == 1) || !IsChar(r) {
				esc = replacement
			}
		}
		if esc != "" {
			dst = append(dst, s[last:i]...)
			dst = append(dst, esc...)
			last = i + width
		}
		i += width
	}
	return append(dst, s[last:]...)
}
