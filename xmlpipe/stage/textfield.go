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

// TakesText reports whether a line of text is all a payload of struct type
// t (or *t) needs: it has a text field (TextField) and every other field
// may hold nothing — a pointer, a string, a slice or a map, or an
// omitempty field — so a payload made of the text alone (NewTextPayload)
// makes nothing up. A Weather{City string; TempC int} has a text field but
// does not take text: its TempC would be a made-up 0.
func TakesText(t reflect.Type) bool {
	idx, ok := TextField(t)
	if !ok {
		return false
	}
	t = derefType(t)
	for i := range t.NumField() {
		f := t.Field(i)
		if (len(idx) == 1 && i == idx[0]) || !f.IsExported() || f.Name == "XMLName" ||
			strings.HasPrefix(f.Tag.Get("xml"), "-") {
			continue
		}
		switch f.Type.Kind() {
		case reflect.Pointer, reflect.Interface, reflect.String, reflect.Slice, reflect.Map:
			continue
		}
		if !omitEmpty(f.Tag.Get("xml")) {
			return false
		}
	}
	return true
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

// PayloadText returns the text of a payload value whose text field (the one
// TextField picks) carries all it holds: every other field is left out or
// empty (see holdsNothing), so showing the text shows the whole answer — a
// ShoutedResponse's Message, an agent's answer. A value that holds more (a
// Weather's City beside its TempC, a result whose Text is set beside its
// Error) has no text of its own: show it whole, as its XML or JSON. A nil
// *string text field (left out) is the empty text.
func PayloadText(v any) (string, bool) {
	rv, ok := Deref(reflect.ValueOf(v))
	if !ok || rv.Kind() != reflect.Struct {
		return "", false
	}
	idx, ok := TextField(rv.Type())
	if !ok || !onlyField(rv, idx) {
		return "", false
	}
	f, ok := Deref(rv.FieldByIndex(idx))
	if !ok {
		return "", true
	}
	return f.String(), true
}

// onlyField reports whether struct value rv holds nothing but its field at
// idx: every other field the payload's XML has (XMLName and xml:"-" fields
// aside; an embedded struct's fields are the payload's own) holds nothing.
func onlyField(rv reflect.Value, idx []int) bool {
	t := rv.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if (len(idx) == 1 && i == idx[0]) || f.Name == "XMLName" || strings.HasPrefix(f.Tag.Get("xml"), "-") {
			continue
		}
		if f.Anonymous {
			if fv, ok := Deref(rv.Field(i)); ok && fv.Kind() == reflect.Struct && !onlyField(fv, nil) {
				return false
			}
			continue
		}
		if f.IsExported() && !holdsNothing(rv.Field(i), f) {
			return false
		}
	}
	return true
}

// holdsNothing reports whether field value fv (of struct field f) carries
// nothing a reader would miss: a nil pointer (left out), an empty string,
// slice or map, or a zero value the xml tag's omitempty leaves out. A
// required number or bool always holds its value, and an optional one
// given (a non-nil pointer) holds it even when it is 0 or false.
func holdsNothing(fv reflect.Value, f reflect.StructField) bool {
	given := fv.Kind() == reflect.Pointer || fv.Kind() == reflect.Interface
	fv, ok := Deref(fv)
	if !ok {
		return true
	}
	switch fv.Kind() {
	case reflect.String, reflect.Slice, reflect.Map:
		return fv.Len() == 0
	}
	return !given && fv.IsZero() && omitEmpty(f.Tag.Get("xml"))
}

// omitEmpty reports the omitempty option of an xml struct tag.
func omitEmpty(tag string) bool {
	_, opts, _ := strings.Cut(tag, ",")
	for opt := range strings.SplitSeq(opts, ",") {
		if opt == "omitempty" {
			return true
		}
	}
	return false
}
