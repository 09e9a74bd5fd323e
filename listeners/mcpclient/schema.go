package mcpclient

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/xml-pipeline/xmlpipe/gen"
	"github.com/xml-pipeline/xmlpipe/gen/xmltext"
)

// maxSchemaDepth bounds the nesting of objects derived as nested structs;
// deeper values travel as JSON.
const maxSchemaDepth = 8

// payloadStruct derives the Go struct type of a tool's input schema (a JSON
// object schema), so that gen derives its XSD, example and prompt and codec
// its XML and JSON forms:
//   - a property is a field named as it is (it must be an XML name),
//     required when the schema says so and it is not nullable;
//   - string, integer, number and boolean become string, int64, float64 and
//     bool — pointers when optional, so that an optional 0, false or "" is
//     told from an absent value all the way to the server;
//   - type [T, "null"] is an optional T;
//   - an array of simple values or of closed objects becomes a repeated
//     field, a closed object (properties, additionalProperties false) a
//     nested struct;
//   - anything else (free-form objects, mixed types, tuples, …) is one JSON
//     value (encoding:"json"): native JSON on every JSON ingress;
//   - each property's schema as the server wrote it rides along in the
//     jsonschema tag, so default, minItems, pattern, … survive when the
//     tool is offered again (gen.JSONSchema lays it over the derived one).
func payloadStruct(root string, schema map[string]any) (reflect.Type, []string, error) {
	fields, arrays, err := structFields(schema, root, 0)
	if err != nil {
		return nil, nil, err
	}
	// The object's own required list rides along too: required arrays are
	// not required in the derived schema (an empty list has no elements).
	tag := `xml:"` + root + `"`
	if req, ok := schema["required"]; ok {
		b, err := json.Marshal(map[string]any{"required": req})
		if err != nil {
			return nil, nil, err
		}
		tag += ` jsonschema:` + strconv.Quote(string(b))
	}
	sf := append([]reflect.StructField{{Name: "XMLName", Type: reflect.TypeFor[xml.Name](),
		Tag: reflect.StructTag(tag)}}, fields...)
	return reflect.StructOf(sf), arrays, nil
}

// structFields derives the fields of an object schema. arrays lists the
// required array properties (sent as [] when empty: the XML form cannot tell
// an empty list from none).
func structFields(schema map[string]any, path string, depth int) ([]reflect.StructField, []string, error) {
	props, _ := schema["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	required := map[string]bool{}
	if rs, ok := schema["required"].([]any); ok {
		for _, r := range rs {
			if s, ok := r.(string); ok {
				required[s] = true
			}
		}
	}
	var (
		out    []reflect.StructField
		arrays []string
	)
	for i, n := range names {
		p, ok := props[n].(map[string]any)
		if !ok {
			p = map[string]any{} // true/false schemas: any value
		}
		if !gen.IsNCName(n) {
			return nil, nil, fmt.Errorf("%s: property %q is not an XML name", path, n)
		}
		f, isArray, err := propertyField(n, p, required[n], path+"."+n, depth)
		if err != nil {
			return nil, nil, err
		}
		f.Name = "F" + strconv.Itoa(i)
		out = append(out, f)
		if isArray && required[n] && depth == 0 {
			arrays = append(arrays, n)
		}
	}
	return out, arrays, nil
}

// propertyField derives one field.
func propertyField(name string, p map[string]any, required bool, path string, depth int) (reflect.StructField, bool, error) {
	types, nullable := schemaTypes(p)
	optional := !required || nullable
	raw, err := json.Marshal(p)
	if err != nil {
		return reflect.StructField{}, false, fmt.Errorf("%s: %w", path, err)
	}
	tag := `xml:"` + name
	if optional {
		tag += ",omitempty"
	}
	tag += `"`
	if d, _ := p["description"].(string); d != "" {
		tag += ` doc:` + strconv.Quote(d)
	}
	tag += ` jsonschema:` + strconv.Quote(string(raw))

	var (
		t       reflect.Type
		isArray bool
	)
	switch kind := single(types); kind {
	case "string", "integer", "number", "boolean":
		t = scalarTypes[kind]
		if enum, ok := stringEnum(p); ok && kind == "string" {
			tag += ` enum:` + strconv.Quote(strings.Join(enum, "|"))
		}
	case "object":
		if st, ok, err := objectStruct(p, path, depth); err != nil {
			return reflect.StructField{}, false, err
		} else if ok {
			t = st
		}
	case "array":
		items, _ := p["items"].(map[string]any)
		itemTypes, itemNullable := schemaTypes(items)
		switch ik := single(itemTypes); {
		case items == nil || itemNullable:
		case ik == "string" || ik == "integer" || ik == "number" || ik == "boolean":
			if _, isEnum := items["enum"]; !isEnum || ik == "string" {
				t, isArray = reflect.SliceOf(scalarTypes[ik]), true
			}
		case ik == "object":
			if st, ok, err := objectStruct(items, path+"[]", depth); err != nil {
				return reflect.StructField{}, false, err
			} else if ok {
				t, isArray = reflect.SliceOf(st), true
			}
		}
	}
	if t == nil {
		// One JSON value, the server's schema its contract.
		t = reflect.TypeFor[string]()
		if optional {
			t = reflect.PointerTo(t)
		}
		return reflect.StructField{Type: t, Tag: reflect.StructTag(tag + ` encoding:"json"`)}, false, nil
	}
	if optional && !isArray {
		t = reflect.PointerTo(t)
	}
	return reflect.StructField{Type: t, Tag: reflect.StructTag(tag)}, isArray, nil
}

var scalarTypes = map[string]reflect.Type{
	"string":  reflect.TypeFor[string](),
	"integer": reflect.TypeFor[int64](),
	"number":  reflect.TypeFor[float64](),
	"boolean": reflect.TypeFor[bool](),
}

// objectStruct derives the nested struct of a closed object schema: with
// properties and additionalProperties false (ok false: it travels as JSON,
// which keeps members a struct would refuse).
func objectStruct(p map[string]any, path string, depth int) (reflect.Type, bool, error) {
	props, _ := p["properties"].(map[string]any)
	if len(props) == 0 || depth+1 >= maxSchemaDepth {
		return nil, false, nil
	}
	if p["additionalProperties"] != false {
		return nil, false, nil // other members allowed: a struct would refuse them
	}
	for _, k := range []string{"patternProperties", "anyOf", "oneOf", "allOf", "$ref", "if", "not"} {
		if _, ok := p[k]; ok {
			return nil, false, nil
		}
	}
	for n := range props {
		if !gen.IsNCName(n) {
			return nil, false, nil
		}
	}
	fields, _, err := structFields(p, path, depth+1)
	if err != nil {
		return nil, false, err
	}
	return reflect.StructOf(fields), true, nil
}

// schemaTypes returns the JSON types a schema allows (without "null") and
// whether null is one of them.
func schemaTypes(p map[string]any) ([]string, bool) {
	var types []string
	switch t := p["type"].(type) {
	case string:
		types = []string{t}
	case []any:
		for _, x := range t {
			if s, ok := x.(string); ok {
				types = append(types, s)
			}
		}
	}
	var out []string
	nullable := false
	for _, t := range types {
		if t == "null" {
			nullable = true
			continue
		}
		out = append(out, t)
	}
	if len(types) == 0 {
		// No type: what the other keywords say, if they say one thing.
		for _, k := range []string{"anyOf", "oneOf", "allOf", "$ref", "not", "if", "const"} {
			if _, ok := p[k]; ok {
				return nil, false
			}
		}
		switch _, hasProps := p["properties"]; {
		case hasProps:
			out = []string{"object"}
		case p["items"] != nil:
			out = []string{"array"}
		default:
			if _, ok := stringEnum(p); ok {
				out = []string{"string"}
			}
		}
	}
	return out, nullable
}

// single returns the one type, or "" when there are none or several.
func single(types []string) string {
	if len(types) == 1 {
		return types[0]
	}
	return ""
}

// stringEnum returns an enum of distinct, non-empty strings without '|'
// (what an enum tag can hold) whose characters XML can carry (a value with
// a control character could never be sent: the field is a plain string).
func stringEnum(p map[string]any) ([]string, bool) {
	vals, ok := p["enum"].([]any)
	if !ok || len(vals) == 0 {
		return nil, false
	}
	seen := map[string]bool{}
	out := make([]string, 0, len(vals))
	for _, v := range vals {
		s, ok := v.(string)
		if !ok || s == "" || strings.Contains(s, "|") || seen[s] || !xmlChars(s) {
			return nil, false
		}
		seen[s] = true
		out = append(out, s)
	}
	return out, true
}

// xmlChars reports whether every character of s is one XML can hold.
func xmlChars(s string) bool {
	for _, r := range s {
		if !xmltext.IsChar(r) {
			return false
		}
	}
	return utf8.ValidString(s)
}
