package gen

import (
	"encoding/json"
	"reflect"
)

// Type is the model of a payload struct (or of a struct nested in one). It is
// immutable once Describe returns it and safe to share between goroutines.
type Type struct {
	// GoType is the struct type described.
	GoType reflect.Type
	// Name is the element name of a payload root: the XMLName tag's local name,
	// else the Go type name. For nested types it equals TypeName.
	Name string
	// TypeName is the name of the XSD complex type: the Go type name, or Name
	// for an unnamed payload struct. It is empty for anonymous nested structs,
	// which are emitted inline.
	TypeName string
	// Namespace is the payload's namespace (from the XMLName tag); empty means
	// no namespace, as the Python reference emits. Only set on payload roots.
	Namespace string
	// Fields are the exported, non-skipped fields in declaration order (fields
	// of embedded structs are promoted in place).
	Fields []Field
	// Schema holds the JSON Schema keywords of a jsonschema tag on the
	// payload's XMLName field, which JSONSchema lays over the object's
	// derived schema. Only set on payload roots.
	Schema json.RawMessage
}

// Field is the model of one struct field: a child element, a repeated element,
// a wrapper around repeated elements, or an attribute.
type Field struct {
	// GoName is the Go field name.
	GoName string
	// Index is the reflect index path of the field (longer than one for fields
	// promoted from embedded structs).
	Index []int
	// GoType is the field's declared Go type.
	GoType reflect.Type
	// Name is the element (or attribute) name; for a wrapped field the name of
	// each item inside the wrapper.
	Name string
	// Wrapper is the wrapper element name of an xml:"A>B" field, else "".
	Wrapper string
	// Attr reports an attribute (xml:",attr").
	Attr bool
	// Pointer reports a pointer field (*T).
	Pointer bool
	// OmitEmpty reports the omitempty tag option.
	OmitEmpty bool
	// Optional reports minOccurs="0" (or an optional attribute): Pointer or OmitEmpty.
	Optional bool
	// Repeated reports a slice field (other than []byte): each item is one element.
	Repeated bool
	// Doc is the doc tag text.
	Doc string
	// Enum lists the allowed values of an enum-tagged field.
	Enum []string
	// Kind is the kind of the value (of each item, when Repeated).
	Kind Kind
	// ValueType is the Go type of the value (of each item, when Repeated) with
	// any pointer removed.
	ValueType reflect.Type
	// Struct is the nested type when Kind is Struct.
	Struct *Type
	// JSON reports an encoding:"json" field: a string element whose text is
	// one JSON value, which JSON ingresses take and give as native JSON.
	JSON bool
	// Schema holds the JSON Schema keywords of a jsonschema tag (a JSON
	// object), which JSONSchema lays over the field's derived schema.
	Schema json.RawMessage
}
