package librarian

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/listeners/tools"
)

// A search or query that matches nothing says so in Content; the result
// read just "search" (its Op) before, which looked like an echo.
func TestNothingMatches(t *testing.T) {
	e, err := OpenEmbedded(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	tool := &Tool{Embedded: e, Policy: tools.Fixed(tools.Config{MaxBytes: 4096})}
	call(t, tool, Librarian{Op: "store", Collection: "notes", Name: "a.xml", Content: `<note><body>whales</body></note>`})
	for _, tc := range []struct {
		p    Librarian
		want LibrarianResult
	}{
		{Librarian{Op: "search", Collection: "notes", Query: "zebra"},
			LibrarianResult{Op: "search", Content: `no documents match "zebra" in /db/agents/notes`}},
		{Librarian{Op: "query", Collection: "notes", Query: "//title"},
			LibrarianResult{Op: "query", Content: `nothing matches "//title" in /db/agents/notes`}},
	} {
		got := call(t, tool, tc.p)
		if d := cmp.Diff(tc.want, *got); d != "" {
			t.Errorf("%s %q (-want +got):\n%s", tc.p.Op, tc.p.Query, d)
		}
	}
}
