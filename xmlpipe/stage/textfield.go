package stage

import (
	"reflect"
	"strings"
)

// textFieldNames are the fields a line of text goes into when a payload has
// more than one string field, in order of preference (python-reference §6.3
// _create_payload, with the SecureConsole's Name as the last resort).
var textFieldNames = []string{"Message", "Text", "Name"}

// TextField returns the index of the string field of struct type t (or *t)
// that a line of text maps to: its only string field, else a string field
// named Message, Text or Name. A *string field (an optional field of a
// field list) counts as a string field. Only the struct's own exported fields count
// (not those promoted from embedded structs, nor XMLName or xml:"-").
// Consoles build a payload from "@listener text" with it, and agents put
// their prose answer into their caller's payload the same way.
func TextField(t reflect.Type) ([]int, bool) {
	t = derefType(t)
	if t.Kind() != reflect.Struct {
		return nil, false
	}
	var strs []reflect.StructField
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || f.Anonymous || f.Name == "XMLName" || strings.HasPrefix(f.Tag.Get("xml"), "-") {
			continue
		}
		if derefType(f.Type).Kind() == reflect.String {
			strs = append(strs, f)
		}
	}
	if len(strs) == 1 {
		return strs[0].Index, true
	}
	for _, name := range textFieldNames {
		for _, f := range strs {
			if f.Name == name {
				return f.Index, true
			}
		}
	}
	return nil, false
}

// NewTextPayload returns a pointer to a new struct of type t (or *t) with
// text in the field TextField picks, or false when t has none.
func NewTextPayload(t reflect.Type, text string) (any, bool) {
	idx, ok := TextField(t)
	if !ok {
		return nil, false
	}
	v := reflect.New(derefType(t))
	f := v.Elem().FieldByIndex(idx)
	for f.Kind() == reflect.Pointer {
		f.Set(reflect.New(f.Type().Elem()))
		f = f.Elem()
	}
	f.SetString(text)
	return v.Interface(), true
}

// PayloadText returns the text a payload value carries in the field
// TextField picks (a ShoutedResponse's Message), if it has one; a nil
// *string text field (left out) is the empty text.
func PayloadText(v any) (string, bool) {
	rv, ok := Deref(reflect.ValueOf(v))
	if !ok {
		return "", false
	}
	idx, ok := TextField(rv.Type())
	if !ok {
		return "", false
	}
	f, ok := Deref(rv.FieldByIndex(idx))
	if !ok {
		return "", true
	}
	return f.String(), true
}
