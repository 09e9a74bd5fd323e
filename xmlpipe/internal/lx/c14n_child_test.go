package lx

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

// c14nChildCases are documents whose document element's children
// C14NChild must canonicalise exactly as C14N does in place.
var c14nChildCases = []string{
	`<r><a>1</a><b x="2" a="1"><c/></b></r>`,
	`<r>prose <a>1</a> between <b/> after</r>`,
	`<r><p:a xmlns:p="urn:p" p:x="1"><p:b/><q:c xmlns:q="urn:q"/></p:a><d xmlns="urn:d"><e xmlns=""/></d></r>`,
	`<r><a xml:lang="en" xml:space="preserve">  t  </a><!-- c --><?pi data?><b>&amp;&lt;&gt;"'</b></r>`,
	`<r><a><![CDATA[ <x> & ]]></a><b xmlns:unused="urn:u"><c/></b></r>`,
	`<r><only/></r>`,
	`<?top pi?><!-- top --><r><a/><b/><c/></r><!-- after --><?after pi?>`,
	`<r><a>1</a><b>2</r>`, // repaired by recover mode
	`<r><p:a>undeclared prefix</p:a><b/></r>`,
	`<r xmlns:p="urn:p"><p:a/><b p:x="1"/></r>`, // declarations on the document element: the fallback
}

// TestC14NChildMatchesC14N: for every child of the document element,
// C14NChild gives C14N's bytes (with and without comments), and the
// document is the same afterwards.
func TestC14NChildMatchesC14N(t *testing.T) {
	for _, in := range c14nChildCases {
		t.Run(in, func(t *testing.T) { checkC14NChild(t, []byte(in)) })
	}
}

// checkC14NChild compares C14NChild with C14N on every child of the
// document element of in (parsed in recover mode).
func checkC14NChild(t *testing.T, in []byte) {
	t.Helper()
	d, _ := Parse(in, OptRecover|OptNoNet)
	if d == nil {
		return
	}
	defer d.Free()
	root := d.Root()
	if root.IsZero() {
		return
	}
	before, err := d.C14N(Node{}, C14NExc10, true, nil)
	if err != nil {
		return
	}
	for c := root.FirstElement(); !c.IsZero(); c = c.NextElement() {
		for _, comments := range []bool{false, true} {
			want, werr := d.C14N(c, C14NExc10, comments, nil)
			got, gerr := d.C14NChild(c, C14NExc10, comments, nil)
			if (werr == nil) != (gerr == nil) || !bytes.Equal(want, got) {
				t.Fatalf("child <%s> comments=%v of %q:\nC14N      %q (%v)\nC14NChild %q (%v)", c.Name(), comments, in, want, werr, got, gerr)
			}
		}
	}
	after, err := d.C14N(Node{}, C14NExc10, true, nil)
	if err != nil || !bytes.Equal(before, after) {
		t.Fatalf("document changed by C14NChild (%v):\nbefore %q\nafter  %q", err, before, after)
	}
}

// TestC14NChildIsLinear: canonicalising every child of a 20,000-child
// document takes well under a second (in place it took minutes; the bound
// is generous for a loaded machine under -race).
func TestC14NChildIsLinear(t *testing.T) {
	run := func(n int) time.Duration {
		var b strings.Builder
		b.WriteString("<r>")
		for i := range n {
			fmt.Fprintf(&b, "<PoetTask><Text>poem %d</Text></PoetTask>\n", i)
		}
		b.WriteString("</r>")
		d := mustParse(t, b.String(), OptNoNet)
		defer d.Free()
		t0 := time.Now()
		k := 0
		for c := d.Root().FirstElement(); !c.IsZero(); c = c.NextElement() {
			if _, err := d.C14NChild(c, C14NExc10, false, nil); err != nil {
				t.Fatal(err)
			}
			k++
		}
		if k != n {
			t.Fatalf("%d children, want %d", k, n)
		}
		return time.Since(t0)
	}
	small, large := run(10000), run(20000)
	t.Logf("10,000 children: %v; 20,000: %v", small, large)
	if large > 10*time.Second {
		t.Fatalf("20,000 children took %v", large)
	}
}

// FuzzC14NChild: C14NChild of each child of the document element is C14N
// of it in place, and leaves the document as it was.
func FuzzC14NChild(f *testing.F) {
	for _, in := range c14nChildCases {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if bytes.Contains(in, []byte("<!")) && bytes.Contains(bytes.ToUpper(in), []byte("DOCTYPE")) {
			return // entity declarations: not what the callers parse
		}
		checkC14NChild(t, in)
	})
}
