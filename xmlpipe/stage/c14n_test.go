package stage

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCanonicalizeGolden compares Canonicalize with libxml2's exclusive C14N
// (no comments) on ../testdata/c14n: namespaces (default, prefixed, unused,
// xmlns=""), attribute order with and without prefixes, attribute value
// whitespace, comments and PIs, CDATA, character references, empty elements.
// The .c14n files were produced by `xmllint --exc-c14n` (03 edited to drop the
// comments, as Canonicalize excludes them).
func TestCanonicalizeGolden(t *testing.T) {
	files, err := filepath.Glob("../../testdata/c14n/*.xml")
	if err != nil || len(files) < 9 {
		t.Fatalf("golden inputs: %v (%d)", err, len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			in, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(strings.TrimSuffix(f, ".xml") + ".c14n")
			if err != nil {
				t.Fatal(err)
			}
			got, err := Canonicalize(in)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Fatalf("got\n%s\nwant\n%s", got, want)
			}
			again, err := Canonicalize(got)
			if err != nil || string(again) != string(got) {
				t.Fatalf("C14N is not idempotent: %s", again)
			}
		})
	}
}
