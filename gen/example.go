package gen

import (
	"bytes"
	"encoding/json"
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
	case f.JSON:
		return exampleJSON(f)
	case f.Kind == String:
		return exampleString(f)
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

// exampleString is the example text of a string field: its doc text when
// short and on one line, else exampleText.
func exampleString(f *Field) string {
	if f.Doc != "" && utf8.RuneCountInString(f.Doc) <= maxExampleDocs && !strings.ContainsAny(f.Doc, "\r\n") {
		return f.Doc
	}
	return exampleText
}

// exampleJSON is the example of an encoding:"json" field: one JSON value,
// the element's only valid content. It is the schema's default, const,
// first enum value or first example when it has one, else a value of its
// type (the first one other than null): {}, [], 1, true, null, or the
// string field's example as a JSON string — also when the schema says no
// type.
func exampleJSON(f *Field) string {
	var s struct {
		Type     any               `json:"type"`
		Default  json.RawMessage   `json:"default"`
		Const    json.RawMessage   `json:"const"`
		Enum     []json.RawMessage `json:"enum"`
		Examples []json.RawMessage `json:"examples"`
	}
	_ = json.Unmarshal(f.Schema, &s) // a schema that does not read says nothing
	for _, v := range [][]byte{s.Default, s.Const, first(s.Enum), first(s.Examples)} {
		if c := compactJSON(v); c != "" {
			return c
		}
	}
	types, _ := s.Type.([]any)
	if t, ok := s.Type.(string); ok {
		types = []any{t}
	}
	for _, t := range types {
		switch t {
		case "object":
			return "{}"
		case "array":
			return "[]"
		case "integer", "number":
			return exampleNumber
		case "boolean":
			return exampleBool
		case "string":
			return jsonString(exampleString(f))
		}
	}
	for _, t := range types {
		if t == "null" {
			return "null"
		}
	}
	return jsonString(exampleString(f))
}

// first returns the first of vs, nil when there is none.
func first(vs []json.RawMessage) json.RawMessage {
	if len(vs) == 0 {
		return nil
	}
	return vs[0]
}

// compactJSON returns v on one line, "" when v is empty or not JSON.
func compactJSON(v []byte) string {
	var b bytes.Buffer
	if len(v) == 0 || json.Compact(&b, v) != nil {
		return ""
	}
	return b.String()
}

// jsonString returns s as a JSON string (without HTML escapes: the XML
// writer escapes what XML needs).
func jsonString(s string) string {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	_ = e.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}
