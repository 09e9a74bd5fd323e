package stage

import "reflect"

// Deref follows the pointers (and interfaces) of v to the value they hold,
// and reports false when one of them is nil: an optional field of a field
// list is a pointer, nil when its element was left out, so a reader of a
// payload's fields takes a nil pointer as absent and a set one as its value.
func Deref(v reflect.Value) (reflect.Value, bool) {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return reflect.Value{}, false
		}
		v = v.Elem()
	}
	return v, v.IsValid()
}

// derefType is t with its pointers removed: the type a Deref'd value of
// type t has.
func derefType(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}
