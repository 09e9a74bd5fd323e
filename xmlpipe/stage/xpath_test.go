package stage

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestEvalXPath(t *testing.T) {
	doc := []byte(`<r xmlns:x="urn:x"><a id="1">one</a><a id="2">two</a><x:b>3</x:b><!--c--></r>`)
	tests := []struct {
		expr  string
		ns    map[string]string
		check func(*XPathResult) bool
	}{
		{"//a", nil, func(r *XPathResult) bool {
			return r.Type == "nodeset" && len(r.Nodes) == 2 && r.Nodes[1].Value == "two" && string(r.Nodes[0].XML) == `<a id="1">one</a>`
		}},
		{"//a/@id", nil, func(r *XPathResult) bool {
			return len(r.Nodes) == 2 && r.Nodes[0].Kind == "attribute" && r.Nodes[0].Name == "id" && r.Nodes[1].Value == "2"
		}},
		{"count(//a)", nil, func(r *XPathResult) bool { return r.Type == "number" && r.Number == 2 }},
		{"sum(//a/@id) + number(//y:b)", map[string]string{"y": "urn:x"}, func(r *XPathResult) bool { return r.Number == 6 }},
		{"//a[2]/text()", nil, func(r *XPathResult) bool {
			return len(r.Nodes) == 1 && r.Nodes[0].Kind == "text" && r.Nodes[0].Value == "two"
		}},
		{"boolean(//a[@id='3'])", nil, func(r *XPathResult) bool { return r.Type == "boolean" && !r.Boolean }},
		{"concat(//a[1], '-', local-name(/*))", nil, func(r *XPathResult) bool { return r.Type == "string" && r.String == "one-r" }},
		{"//comment()", nil, func(r *XPathResult) bool { return len(r.Nodes) == 1 && r.Nodes[0].Kind == "comment" }},
		{"/r/namespace::x", nil, func(r *XPathResult) bool {
			return len(r.Nodes) == 1 && r.Nodes[0].Kind == "namespace" && r.Nodes[0].Value == "urn:x"
		}},
	}
	for _, tc := range tests {
		r, err := EvalXPath(context.Background(), doc, tc.expr, tc.ns, 0)
		if err != nil || !tc.check(r) {
			t.Errorf("%s: %+v, %v", tc.expr, r, err)
		}
	}
	for _, bad := range []struct {
		doc, expr string
		want      error
	}{
		{"<r/>", "//[", ErrXPath},
		{"<r/>", "count(", ErrXPath},
		{"<r/>", "//y:b", ErrXPath},
		{"<r/>", "unknownfn(1)", ErrXPath},
		{"<r>", "//r", ErrDocument},
		{"", "//r", ErrDocument},
		{`<!DOCTYPE r [<!ENTITY e "x">]><r>&e;</r>`, "//r", ErrDocument},
	} {
		if _, err := EvalXPath(context.Background(), []byte(bad.doc), bad.expr, nil, 0); !errors.Is(err, bad.want) {
			t.Errorf("%q %q: err = %v, want %v", bad.doc, bad.expr, err, bad.want)
		}
	}
	// A runaway expression is stopped by the operation limit.
	big := "<r>" + strings.Repeat("<a><b/><b/><b/></a>", 300) + "</r>"
	if _, err := EvalXPath(context.Background(), []byte(big), "count(//*[count(//*[count(//*) > 0]) > 0])", nil, 0); !errors.Is(err, ErrXPath) ||
		!strings.Contains(err.Error(), "operation limit exceeded") {
		t.Errorf("runaway: err = %v", err)
	}
}

// TestEvalXPathConcatBounded: concat() keeps XPath's meaning, but the string
// it builds is bounded (lx.XPathMaxString) and built in linear time, so a
// short expression repeating the document's text cannot hold a handler for
// hours or take gigabytes (libxml2's own concat is one "operation" however
// much it copies, and copies quadratically).
func TestEvalXPathConcatBounded(t *testing.T) {
	text := strings.Repeat("x", 256<<10)
	doc := []byte(`<r><a>one</a><b>` + text + `</b></r>`)
	repeat := func(n int) string { return "concat(" + strings.Repeat("//b,", n-1) + "//b)" }
	for _, tc := range []struct {
		name, expr string
		want       string // the string, or "" for an error
		wantErr    string
	}{
		{name: "two strings", expr: "concat('a', 'b')", want: "ab"},
		{name: "mixed types", expr: "concat(1, true(), //a, '', 2.5)", want: "1trueone2.5"},
		{name: "nested", expr: "concat(concat(//a, '-'), concat('-', //a), //a)", want: "one--oneone"},
		{name: "one argument", expr: "concat('a')", wantErr: "invalid number of arguments"},
		{name: "under the cap", expr: repeat(15), want: strings.Repeat(text, 15)},
		{name: "over the cap", expr: repeat(17), wantErr: "concat() would make a string of more than 4194304 bytes"},
		{name: "thousands of arguments", expr: repeat(2000), wantErr: "concat() would make a string of more than"},
		{name: "nested over the cap", expr: "concat(" + repeat(12) + "," + repeat(12) + ")",
			wantErr: "concat() would make a string of more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			type answer struct {
				r   *XPathResult
				err error
			}
			done := make(chan answer, 1)
			go func() {
				r, err := EvalXPath(context.Background(), doc, tc.expr, nil, 0)
				done <- answer{r, err}
			}()
			var a answer
			select {
			case a = <-done:
			case <-time.After(2 * time.Minute):
				t.Fatal("still evaluating after 2 minutes")
			}
			if tc.wantErr != "" {
				if !errors.Is(a.err, ErrXPath) || !strings.Contains(a.err.Error(), tc.wantErr) {
					got := 0
					if a.r != nil {
						got = len(a.r.String)
					}
					t.Fatalf("err = %v (a string of %d bytes), want an XPath error saying %q", a.err, got, tc.wantErr)
				}
				return
			}
			if a.err != nil {
				t.Fatal(a.err)
			}
			if a.r.Type != "string" || a.r.String != tc.want {
				t.Fatalf("%s = %s %.40q… (%d bytes), want %.40q… (%d bytes)", tc.expr, a.r.Type, a.r.String, len(a.r.String), tc.want, len(tc.want))
			}
		})
	}
}
