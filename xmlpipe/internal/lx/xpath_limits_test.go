package lx

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// slowXPathDoc is 1500 empty elements and 100 KB of text: nested predicates
// copying string(/) keep libxml2 busy for 12 s or more before its op limit.
func slowXPathDoc() string {
	return "<r>" + strings.Repeat("<a/>", 1500) + strings.Repeat("x", 100<<10) + "</r>"
}

const slowXPath = "count(//*[//*[string(/)='y']])"

func TestXPathStopsWhenTheContextEnds(t *testing.T) {
	d := mustParse(t, slowXPathDoc(), OptNoNet)
	defer d.Free()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := d.XPath(ctx, slowXPath, nil, 0)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrXPathStopped) || !errors.Is(err, ErrXPath) {
		t.Fatalf("err = %v, want ErrXPath, ErrXPathStopped and context.DeadlineExceeded", err)
	}
	t.Logf("stopped after %v: %v", time.Since(start), err)

	// The document is still usable: the stop belonged to that evaluation.
	v, err := d.XPath(context.Background(), "count(//a)", nil, 0)
	if err != nil || v.Number != 1500 {
		t.Fatalf("count(//a) after a stop = %v, %v; want 1500", v.Number, err)
	}
}

func TestXPathDoesNotStartOnADoneContext(t *testing.T) {
	d := mustParse(t, "<r/>", OptNoNet)
	defer d.Free()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := d.XPath(ctx, "/r", nil, 0); !errors.Is(err, context.Canceled) || !errors.Is(err, ErrXPathStopped) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestXPathStopsPastMaxResult(t *testing.T) {
	nested := strings.Repeat("<a>", 250) + strings.Repeat("x", 250<<10) + strings.Repeat("</a>", 250)
	tests := []struct {
		name, doc, expr string
		max             int
		wantErr         string // "" for no error
		wantNodes       int
	}{
		// 250 string-values of 250 KB each would be 62 MB: the second passes.
		{"nested elements", nested, "//*", 256 << 10, "the first 2 of 250 nodes pass 262144 bytes", 0},
		{"document node", nested, "/", 100 << 10, "the first 1 of 1 nodes pass 102400 bytes", 0},
		{"text nodes", "<r><a>12345</a><a>67890</a></r>", "//text()", 9, "the first 2 of 2 nodes pass 9 bytes", 0},
		{"string", nested, "string(/)", 1000, "the string is 256000 bytes (max: 1000)", 0},
		{"within the bound", "<r><a>12345</a><a>67890</a></r>", "//a", 12, "", 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := mustParse(t, tc.doc, OptNoNet)
			defer d.Free()
			v, err := d.XPath(context.Background(), tc.expr, nil, tc.max)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.wantNodes, len(v.Nodes)); diff != "" {
					t.Fatalf("nodes (-want +got):\n%s", diff)
				}
				return
			}
			if !errors.Is(err, ErrXPathTooLarge) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want ErrXPathTooLarge saying %q", err, tc.wantErr)
			}
		})
	}
}
