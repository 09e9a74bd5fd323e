package librarian

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestQueryStopsPastItsBound: a query's results over all the collection's
// documents were built in full (each document's node-set, string-values
// and canonical XML) before the tool weighed them; evaluation now stops
// once they pass what one answer can carry.
func TestQueryStopsPastItsBound(t *testing.T) {
	e, err := OpenEmbedded(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	doc := "<d>" + strings.Repeat("<a>", 50) + strings.Repeat("x", 200<<10) + strings.Repeat("</a>", 50) + "</d>"
	for i := range 3 {
		if err := e.Store(ctx, fmt.Sprintf("/db/big/%d.xml", i), doc); err != nil {
			t.Fatal(err)
		}
	}
	if r, _, err := e.Query(ctx, "/db/big", "count(//a)"); err != nil || len(r) != 3 {
		t.Fatalf("count(//a): %d results, %v", len(r), err)
	}
	_, _, err = e.Query(ctx, "/db/big", "//a")
	if !errors.Is(err, stage.ErrResultTooLarge) || !strings.Contains(err.Error(), "librarian: results over 1048576 bytes") {
		t.Fatalf("//a: err = %v, want results over 1048576 bytes", err)
	}
}
