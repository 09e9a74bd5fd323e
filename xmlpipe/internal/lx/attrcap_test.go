package lx

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// attrs renders n distinct attributes, each value holding a '>' (legal in
// an attribute value) so that the count cannot stop at it.
func attrs(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, ` a%d="v>%d"`, i, i)
	}
	return b.String()
}

// quoted renders n quoted strings, as text that is no attribute.
func quoted(n int) string { return strings.Repeat(`"q" `, n) }

// TestParseRefusesTooManyAttributes: an element over MaxAttributes is
// refused before libxml2 parses it — quadratic there and in C14N — with a
// fatal diagnostic at its start tag, in every parse mode; quoted strings in
// comments, CDATA, processing instructions and text do not count, nor do
// attributes spread over many elements.
func TestParseRefusesTooManyAttributes(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		refuse bool
		line   int
	}{
		{"at the bound", `<r` + attrs(MaxAttributes) + `/>`, false, 0},
		{"namespace declarations count", `<r` + attrs(MaxAttributes-1) + ` xmlns:p="urn:p" xmlns="urn:d"/>`, true, 1},
		{"one over", `<r` + attrs(MaxAttributes+1) + `/>`, true, 1},
		{"nested, single quotes", "<r>\n<c" + strings.ReplaceAll(attrs(MaxAttributes+1), `"`, `'`) + "></c></r>", true, 2},
		{"80 000", `<r` + attrs(80000) + `/>`, true, 1},
		{"spread over elements", `<r>` + strings.Repeat(`<c`+attrs(MaxAttributes)+`/>`, 8) + `</r>`, false, 0},
		{"comment", `<r><!--` + quoted(2*MaxAttributes) + `--></r>`, false, 0},
		{"cdata", `<r><![CDATA[<x ` + quoted(2*MaxAttributes) + `]]></r>`, false, 0},
		{"processing instruction", `<?pi ` + quoted(2*MaxAttributes) + `?><r/>`, false, 0},
		{"text", `<r>` + quoted(2*MaxAttributes) + `</r>`, false, 0},
	}
	for _, tc := range tests {
		for _, opts := range []Options{OptNoNet, OptNoNet | OptRecover} {
			t.Run(fmt.Sprintf("%s/%d", tc.name, opts), func(t *testing.T) {
				d, e := Parse([]byte(tc.in), opts)
				defer d.Free()
				if !tc.refuse {
					if d == nil || e.Severe() {
						t.Fatalf("refused: %v", e)
					}
					return
				}
				if d != nil {
					t.Fatal("parsed; want a refusal")
				}
				want := []Error{{Level: LevelFatal, Line: tc.line, Col: 1,
					Msg: fmt.Sprintf("%v: more than %d", ErrTooManyAttributes, MaxAttributes)}}
				if diff := cmp.Diff(want, e.List); diff != "" {
					t.Fatalf("diagnostics (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// BenchmarkParseAttributeScan is what the attribute cap adds to every
// parse: one scan of a typical envelope, against the parse itself.
func BenchmarkParseAttributeScan(b *testing.B) {
	env := []byte(`<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta><from>console</from>` +
		`<to>greeter</to><thread>4f0b9a9e-6d1c-4b8e-9c57-2f7d0c3e6a11</thread></meta>` +
		`<Greeting xmlns="" lang="en" kind="friendly"><Name>Dan</Name><Note>a sentence that mentions "quotes" &amp; more</Note></Greeting></message>`)
	b.Run("scan", func(b *testing.B) {
		b.SetBytes(int64(len(env)))
		for b.Loop() {
			if tooManyAttributes(env, MaxAttributes) >= 0 {
				b.Fatal("refused")
			}
		}
	})
	b.Run("parse", func(b *testing.B) {
		b.SetBytes(int64(len(env)))
		for b.Loop() {
			d, errs := Parse(env, OptNoNet)
			if d == nil {
				b.Fatal(errs)
			}
			d.Free()
		}
	})
}
