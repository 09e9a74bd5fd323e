package stage

import (
	"errors"
	"strings"
	"testing"
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
		r, err := EvalXPath(doc, tc.expr, tc.ns)
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
		if _, err := EvalXPath([]byte(bad.doc), bad.expr, nil); !errors.Is(err, bad.want) {
			t.Errorf("%q %q: err = %v, want %v", bad.doc, bad.expr, err, bad.want)
		}
	}
	// A runaway expression is stopped by the operation limit.
	big := "<r>" + strings.Repeat("<a><b/><b/><b/></a>", 300) + "</r>"
	if _, err := EvalXPath([]byte(big), "count(//*[count(//*[count(//*) > 0]) > 0])", nil); !errors.Is(err, ErrXPath) ||
		!strings.Contains(err.Error(), "operation limit exceeded") {
		t.Errorf("runaway: err = %v", err)
	}
}
