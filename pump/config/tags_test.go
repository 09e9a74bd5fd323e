package config

import (
	"reflect"
	"testing"
)

// checkTags walks the configuration types and fails for any exported field
// without a yaml tag.
func checkTags(t *testing.T, v any) {
	t.Helper()
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(typ reflect.Type) {
		if seen[typ] {
			return
		}
		seen[typ] = true
		switch typ.Kind() {
		case reflect.Struct:
			if reflect.PointerTo(typ).Implements(unmarshalerType) {
				return
			}
			for i := range typ.NumField() {
				f := typ.Field(i)
				if !f.IsExported() {
					continue
				}
				if f.Tag.Get("yaml") == "" {
					t.Errorf("%s.%s has no yaml tag", typ.Name(), f.Name)
				}
				walk(f.Type)
			}
		case reflect.Slice, reflect.Map:
			walk(typ.Elem())
		}
	}
	walk(reflect.TypeOf(v))
}
