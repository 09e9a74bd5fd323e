package guardian

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// fold returns s as a reader sees it, for rules to match: its format
// characters removed (zero-width spaces and joiners, soft hyphens,
// bidirectional controls — Unicode category Cf, which no one sees) and its
// compatibility characters replaced by what they stand for (NFKC: fullwidth
// "ｒｍ" is "rm", a no-break space a space). Without it a model writing
// "r\u200bm -rf" or "p\u00aday $5" would slip past a rule every human
// reading the same text takes it to break.
func fold(s string) string {
	clean := strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, s)
	if norm.NFKC.IsNormalString(clean) {
		return clean
	}
	return norm.NFKC.String(clean)
}

// withFolded appends to forms the folded form of each that folding
// changes.
func withFolded(forms []string) []string {
	for _, f := range forms {
		if g := fold(f); g != f {
			forms = append(forms, g)
		}
	}
	return forms
}
