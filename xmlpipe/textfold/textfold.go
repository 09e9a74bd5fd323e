// Package textfold reads text as a person reading it sees it, so that a
// rule or a scan written for plain text is not slipped past with look-alike
// or invisible characters: the guardian's rules (pump/guardian) and memory
// law's secret scan (listeners/memory) match the folded form too.
package textfold

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Fold returns s as a reader sees it: compatibility forms folded (NFKC:
// fullwidth "ｒｍ" is "rm", styled letters and no-break spaces their plain
// forms), invisible characters dropped (zero-width spaces and joiners, soft
// hyphens, byte order marks, bidirectional controls — Unicode category Cf
// — and combining marks laid over a character), every other space a space
// and every dash a hyphen. ASCII text is returned as it is.
func Fold(s string) string {
	if isASCII(s) {
		return s
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r < 0x80:
			return r
		case unicode.In(r, unicode.Cf, unicode.Mn, unicode.Me):
			return -1
		case unicode.Is(unicode.Zs, r):
			return ' '
		case unicode.Is(unicode.Pd, r):
			return '-'
		}
		return r
	}, norm.NFKC.String(s))
}

// isASCII reports whether s is all ASCII (nothing to fold).
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
