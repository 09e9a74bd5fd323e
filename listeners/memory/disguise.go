package memory

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// undisguise returns text as a reader sees it, for Prohibited to scan:
// compatibility forms folded (full-width and styled letters, no-break
// spaces — NFKC), invisible characters dropped (zero-width spaces and
// joiners, soft hyphens, byte order marks, combining marks laid over a
// character), every other space a space and every dash a hyphen. A secret
// written with such characters inside it reads as the secret again.
func undisguise(text string) string {
	folded := norm.NFKC.String(text)
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
	}, folded)
}
