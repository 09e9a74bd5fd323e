package gen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
)

// JSONSchema derives the JSON Schema (draft 2020-12) of a payload's JSON
// form: an object whose properties are the fields by their JSONName, each
// required unless optional or repeated, no other properties allowed. Kinds
// map to JSON types (sized integers carry their bounds, unsigned ones
// minimum 0, times format date-time, bytes contentEncoding base64), repeated
// fields to arrays, nested structs to objects, encoding:"json" fields to any
// JSON value; doc becomes description, enum tags enum, and the keywords of
// a jsonschema tag are laid over the result (on XMLName: over the object). It is the one derivation the
// MCP bridge, mounted MCP tools and LLM tool calling share; the result is a
// fresh map the caller may change.
func JSONSchema(t *Type) map[string]any {
	props := map[string]any{}
	required := []string{}
	for _, f := range t.Fields {
		props[f.JSONName()] = FieldJSONSchema(f)
		if !f.Optional && !f.Repeated {
			required = append(required, f.JSONName())
		}
	}
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	overlay(s, t.Schema)
	return s
}

// overlay sets the keywords of extra (a JSON object, possibly empty) on s.
func overlay(s map[string]any, extra json.RawMessage) {
	if len(extra) == 0 {
		return
	}
	var m map[string]any
	if json.Unmarshal(extra, &m) == nil { // checked by Describe
		for k, v := range m {
			s[k] = v
		}
	}
}

// JSONName is the name of the field in the payload's JSON form: the wrapper
// element of a wrapped field (it holds the list), else the element or
// attribute name.
func (f Field) JSONName() string {
	if f.Wrapper != "" {
		return f.Wrapper
	}
	return f.Name
}

// FieldJSONSchema derives the JSON Schema of one field (see JSONSchema).
func FieldJSONSchema(f Field) map[string]any {
	item := valueJSONSchema(f)
	s := item
	if f.Repeated {
		s = map[string]any{"type": "array", "items": item}
	}
	if f.Doc != "" {
		s["description"] = f.Doc
	}
	overlay(s, f.Schema)
	return s
}

// valueJSONSchema is the schema of one value (one item of a repeated field).
func valueJSONSchema(f Field) map[string]any {
	if f.JSON {
		return map[string]any{}
	}
	switch k := f.Kind; {
	case k == String:
		s := map[string]any{"type": "string"}
		if len(f.Enum) > 0 {
			s["enum"] = append([]string(nil), f.Enum...)
		}
		return s
	case k == Int || k == Int64:
		return map[string]any{"type": "integer"}
	case k == Int8 || k == Int16 || k == Int32:
		n := int64(1) << (k.BitSize() - 1)
		return map[string]any{"type": "integer", "minimum": -n, "maximum": n - 1}
	case k == Uint || k == Uint64:
		return map[string]any{"type": "integer", "minimum": 0}
	case k.IsUnsigned():
		return map[string]any{"type": "integer", "minimum": 0, "maximum": uint64(1)<<k.BitSize() - 1}
	case k == Float32:
		return map[string]any{"type": "number", "minimum": -math.MaxFloat32, "maximum": math.MaxFloat32}
	case k == Float64:
		return map[string]any{"type": "number"}
	case k == Bool:
		return map[string]any{"type": "boolean"}
	case k == Time:
		return map[string]any{"type": "string", "format": "date-time"}
	case k == Bytes:
		return map[string]any{"type": "string", "contentEncoding": "base64"}
	case k == Struct && f.Struct != nil:
		return JSONSchema(f.Struct)
	}
	return map[string]any{}
}

// parseJSONTags applies the encoding and jsonschema tags to f.
func parseJSONTags(f *Field, tag reflect.StructTag) error {
	if enc, ok := tag.Lookup("encoding"); ok {
		switch {
		case enc != "json":
			return fmt.Errorf("encoding tag %q is not supported (only \"json\")", enc)
		case f.Kind != String || f.Repeated || len(f.Enum) > 0:
			return fmt.Errorf("encoding:\"json\" needs a string field without an enum, not %s", f.GoType)
		}
		f.JSON = true
	}
	if js, ok := tag.Lookup("jsonschema"); ok {
		b := bytes.TrimSpace([]byte(js))
		var m map[string]json.RawMessage
		if len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &m) != nil {
			return fmt.Errorf("jsonschema tag %q is not a JSON object", js)
		}
		f.Schema = json.RawMessage(b)
	}
	return nil
}
