package guardian

import "github.com/xml-pipeline/xmlpipe/xmlpipe/textfold"

// withFolded appends to forms the folded form (textfold.Fold: as a reader
// sees it, as listeners/memory reads a secret) of each that folding
// changes. Without it a model writing "r\u200bm -rf", "p\u00aday $5" or
// "rm \u2013rf" would slip past a rule every human reading the same text
// takes it to break.
func withFolded(forms []string) []string {
	for _, f := range forms {
		if g := textfold.Fold(f); g != f {
			forms = append(forms, g)
		}
	}
	return forms
}
