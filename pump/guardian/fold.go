package guardian

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// fold returns s as a reader sees it, for rules to match: compatibility
// forms folded (NFKC: fullwidth "ｒｍ" is "rm"), invisible characters dropped
// (zero-width spaces and joiners, soft hyphens, bidirectional controls —
// Unicode category Cf — and combining marks laid over a character), every
// other space a space and every dash a hyphen — as listeners/memory reads a
// secret. Without it a model writing "r\u200bm -rf", "p\u00aday $5" or
// "rm \u2013rf" would slip past a rule every human reading the same text
// takes it to break.
func fold(s string) string {
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

// withFolded appends to forms the folded form of each that folding
// changes.
func withFolded(forms []string) []string {
	for _, f := range forms {
		if isASCII(f) {
			continue // folding changes nothing
		}
		if g := fold(f); g != f {
			forms = append(forms, g)
		}
	}
	return forms
}

// isASCII reports whether s is all ASCII.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
