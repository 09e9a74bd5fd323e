package mcp

import (
	"github.com/xml-pipeline/xmlpipe/gen"
)

// InputSchema derives a JSON Schema (an object, 2020-12 draft) from a
// payload model: each field a property named as its element, required unless
// optional, arrays for repeated fields, objects for nested structs, enums and
// documentation carried over.
func InputSchema(t *gen.Type) map[string]any {
	props := map[string]any{}
	required := []string{}
	for _, f := range t.Fields {
		props[f.Name] = fieldSchema(f)
		if !f.Optional && !f.Repeated {
			required = append(required, f.Name)
		}
	}
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

func fieldSchema(f gen.Field) map[string]any {
	item := valueSchema(f)
	if f.Doc != "" {
		item["description"] = f.Doc
	}
	if !f.Repeated {
		return item
	}
	arr := map[string]any{"type": "array", "items": item}
	if f.Doc != "" {
		arr["description"] = f.Doc
	}
	return arr
}

func valueSchema(f gen.Field) map[string]any {
	switch f.Kind {
	case gen.String:
		s := map[string]any{"type": "string"}
		if len(f.Enum) > 0 {
			s["enum"] = f.Enum
		}
		return s
	case gen.Int, gen.Int8, gen.Int16, gen.Int32, gen.Int64:
		return map[string]any{"type": "integer"}
	case gen.Uint, gen.Uint8, gen.Uint16, gen.Uint32, gen.Uint64:
		return map[string]any{"type": "integer", "minimum": 0}
	case gen.Float32, gen.Float64:
		return map[string]any{"type": "number"}
	case gen.Bool:
		return map[string]any{"type": "boolean"}
	case gen.Time:
		return map[string]any{"type": "string", "format": "date-time"}
	case gen.Bytes:
		return map[string]any{"type": "string", "contentEncoding": "base64"}
	case gen.Struct:
		if f.Struct != nil {
			return InputSchema(f.Struct)
		}
	}
	return map[string]any{}
}
