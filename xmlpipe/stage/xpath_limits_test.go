package stage

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestEvalXPathStopsWhenTheContextEnds: nested predicates copying
// string(/) of a 100 KB document ran 12 s or more in libxml2 before its op
// limit; the handler's deadline now stops them.
func TestEvalXPathStopsWhenTheContextEnds(t *testing.T) {
	doc := []byte("<r>" + strings.Repeat("<a/>", 1500) + strings.Repeat("x", 100<<10) + "</r>")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := EvalXPath(ctx, doc, "count(//*[//*[string(/)='y']])", nil, 0)
	if !errors.Is(err, ErrXPath) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrXPath wrapping context.DeadlineExceeded", err)
	}
}

// TestEvalXPathStopsPastMaxResult: a node-set's string-values and canonical
// XML were built in full (//* over 250 nested elements around 250 KB of
// text: about 125 MiB) before any caller could weigh them.
func TestEvalXPathStopsPastMaxResult(t *testing.T) {
	nested := strings.Repeat("<a>", 250) + strings.Repeat("x", 250<<10) + strings.Repeat("</a>", 250)
	markup := "<r>" + strings.Repeat(`<a b="`+strings.Repeat("y", 100)+`"/>`, 1000) + "</r>"
	tests := []struct {
		name, doc, expr string
		max             int
		wantErr         string
	}{
		{"string-values", nested, "//*", 256 << 10, "xpath: result too large: the first 2 of 250 nodes pass 262144 bytes (names and string-values)"},
		{"canonical XML", markup, "//a", 10 << 10,
			"xpath: result too large: the 1000 nodes with the canonical XML of the first 83 pass 10240 bytes"},
		{"string", nested, "string(//a)", 1 << 10, "xpath: result too large: the string is 256000 bytes (max: 1024)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := EvalXPath(context.Background(), []byte(tc.doc), tc.expr, nil, tc.max)
			if !errors.Is(err, ErrResultTooLarge) || !errors.Is(err, ErrXPath) || err.Error() != tc.wantErr {
				t.Fatalf("err = %v (result %v), want %q", err, r != nil, tc.wantErr)
			}
		})
	}
	// The same expressions within a bound that fits them.
	r, err := EvalXPath(context.Background(), []byte(markup), "//a", nil, 200<<10)
	if err != nil || len(r.Nodes) != 1000 {
		t.Fatalf("//a within the bound: %v", err)
	}
}
