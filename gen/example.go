package gen

import (
	"strings"
	"unicode/utf8"
)

// Example values by kind. Every one is valid for its XSD type.
const (
	exampleText    = "text"
	exampleNumber  = "1"
	exampleBool    = "true"
	exampleTime    = "2026-01-01T00:00:00Z"
	exampleBytes   = "ZXhhbXBsZQ==" // base64 of "example"
	maxExampleDocs = 40             // longest doc text used as an example string, in runes
)

// Example returns an instance of payload type t that validates against XSD(t):
// the real element and attribute names, every optional element and attribute
// present, one item per repeated element, and values chosen by type (a short
// text, the field's doc text when it is short, for strings; 1 for numbers;
// true; 2026-01-01T00:00:00Z; the base64 of "example"; the first enum value).
// It is pretty-printed with a 2-space indent and a final newline, without an
// XML declaration.
func Example(t *Type) []byte {
	root := exampleStruct(t.Name, t)
	if t.Namespace != "" {
		root.attrs = append([]attr{{"xmlns", t.Namespace}}, root.attrs...)
	}
	return root.pretty()
}

// exampleStruct renders an element named name holding an example of ty.
func exampleStruct(name string, ty *Type) *node {
	n := elem(name)
	for i := range ty.Fields {
		f := &ty.Fields[i]
		switch {
		case f.Attr:
			n.set(f.Name, exampleValue(f))
		case f.Wrapper != "":
			n.add(elem(f.Wrapper).add(exampleField(f)))
		default:
			n.add(exampleField(f))
		}
	}
	return n
}

// exampleField renders one element of field f.
func exampleField(f *Field) *node {
	if f.Kind == Struct {
		return exampleStruct(f.Name, f.Struct)
	}
	return elem(f.Name).withText(exampleValue(f))
}

// exampleValue returns the example lexical value of a simple field.
func exampleValue(f *Field) string {
	if len(f.Enum) > 0 {
		return f.Enum[0]
	}
	switch {
	case f.Kind == String:
		if f.Doc != "" && utf8.RuneCountInString(f.Doc) <= maxExampleDocs && !strings.ContainsAny(f.Doc, "\r\n") {
			return f.Doc
		}
		return exampleText
	case f.Kind.IsInteger(), f.Kind.IsFloat():
		return exampleNumber
	case f.Kind == Bool:
		return exampleBool
	case f.Kind == Time:
		return exampleTime
	case f.Kind == Bytes:
		return exampleBytes
	}
	return exampleText
}
