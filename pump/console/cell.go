package console

import (
	"strings"
	"unicode"
)

// Cell is s as one cell of one row of a table printed to a terminal: white
// space (tabs, line breaks) becomes a space, and what would move the
// cursor, change the terminal's state or reorder the text around it
// (control characters, escape sequences, bidirectional controls) becomes
// U+FFFD. A listener's description may be written by someone else (a
// federated peer's import, a listener registered over OOB), so /listeners
// and `xmlpipe route` print it through Cell.
func Cell(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return ' '
		case unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r):
			return '\uFFFD'
		}
		return r
	}, s)
}
