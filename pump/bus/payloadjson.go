package bus

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// errUnknownField is a JSON payload key that names no field of the payload.
var errUnknownField = errors.New("unknown field")

// fieldKey normalises a field name for matching: lower case, without _ and
// - (so "original_sender", "originalSender" and "OriginalSender" agree).
func fieldKey(s string) string {
	return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(s))
}

// payloadFromJSON builds a payload of struct type t from a JSON object: each
// key names a field by its Go name, its XML element name or their
// snake_case form (case-insensitive); the value is decoded into the field
// with encoding/json. It returns a pointer to the new struct.
func payloadFromJSON(t reflect.Type, obj map[string]json.RawMessage) (any, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("payload type %v is not a struct", t)
	}
	fields := map[string][]int{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("xml")
		if !f.IsExported() || f.Anonymous || f.Name == "XMLName" || tag == "-" {
			continue
		}
		fields[fieldKey(f.Name)] = f.Index
		name, _, _ := strings.Cut(tag, ",")
		if i := strings.LastIndexByte(name, ' '); i >= 0 {
			name = name[i+1:] // "namespace local"
		}
		name, _, _ = strings.Cut(name, ">") // "Wrapper>Item": the wrapper is the child element

		if name != "" {
			fields[fieldKey(name)] = f.Index
		}
	}
	v := reflect.New(t)
	for key, raw := range obj {
		idx, ok := fields[fieldKey(key)]
		if !ok {
			return nil, fmt.Errorf("%w %q", errUnknownField, key)
		}
		if err := json.Unmarshal(raw, v.Elem().FieldByIndex(idx).Addr().Interface()); err != nil {
			return nil, fmt.Errorf("field %q: %w", key, err)
		}
	}
	return v.Interface(), nil
}
