package codec

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/xml-pipeline/xmlpipe/gen"
	"github.com/xml-pipeline/xmlpipe/gen/xmltext"
)

// ErrJSON is wrapped by every AppendJSON and JSONOf error.
var ErrJSON = errors.New("invalid JSON payload")

// JSONError is a JSON payload that does not fit its payload type. Path names
// the value at fault in the JSON form ("Items[2].Price"; "" for the whole
// payload).
type JSONError struct {
	Path string
	Msg  string
}

// Error renders "Path: Msg" (or Msg alone).
func (e *JSONError) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// Unwrap returns ErrJSON.
func (e *JSONError) Unwrap() error { return ErrJSON }

// JSONOptions tune AppendJSON.
type JSONOptions struct {
	// FoldNames matches an object's keys to fields loosely, as the REST API
	// does: by JSON name, element name or Go name, case-insensitively and
	// ignoring '_' and '-' ("original_sender" is OriginalSender). Without
	// it a key must be the field's JSONName exactly.
	FoldNames bool
	// EmptyNS writes xmlns="" on the root of a payload type without a
	// namespace (the payload then sits inside an envelope).
	EmptyNS bool
}

// AppendJSON writes the payload element of type t described by a JSON object
// (the payload's JSON form, whose schema gen.JSONSchema derives). Presence,
// not value, decides what is written: a member given — even 0, false or "" —
// becomes its element, an absent or null one none. Nothing is coerced: each
// value must have its field's JSON type (a number for an integer field, a
// string for a string field, an array for a repeated field, an object for a
// nested struct; any JSON for an encoding:"json" field, written as compact
// JSON text), integers must fit their Go type, strings must be XML
// characters and enum members, times xs:dateTime and bytes base64. Unknown
// and duplicate members, missing required ones, text that is not UTF-8 or
// escapes an unpaired surrogate are errors. Empty data or null is the empty
// object. Every error is a *JSONError wrapping ErrJSON.
func AppendJSON(dst []byte, t *gen.Type, data []byte, opts JSONOptions) ([]byte, error) {
	root := jvalue{kind: jObject}
	if len(strings.TrimSpace(string(data))) > 0 {
		v, err := parseJSON(data)
		if err != nil {
			return dst, &JSONError{Msg: err.Error()}
		}
		switch v.kind {
		case jObject:
			root = v
		case jNull:
		default:
			return dst, &JSONError{Msg: "want an object of fields, got " + v.describe()}
		}
	}
	start := len(dst)
	dst = append(dst, '<')
	dst = append(dst, t.Name...)
	switch {
	case t.Namespace != "":
		dst = append(dst, ` xmlns="`...)
		dst = xmltext.AppendAttr(dst, t.Namespace)
		dst = append(dst, '"')
	case opts.EmptyNS:
		dst = append(dst, ` xmlns=""`...)
	}
	dst, err := appendJSONBody(dst, t, root, "", opts)
	if err != nil {
		return dst[:start], err
	}
	return dst, nil
}

// appendJSONBody writes the attributes, the rest of the start tag, the
// children and the end tag (named t.Name) of struct type t from object obj.
func appendJSONBody(dst []byte, t *gen.Type, obj jvalue, path string, opts JSONOptions) ([]byte, error) {
	given, err := matchMembers(t, obj, path, opts.FoldNames)
	if err != nil {
		return dst, err
	}
	for i, f := range t.Fields {
		if !f.Optional && !f.Repeated && (given[i] < 0 || obj.vals[given[i]].kind == jNull) {
			return dst, &JSONError{Path: join(path, f.JSONName()), Msg: "missing (required, want " + want(f) + ")"}
		}
	}
	for i, f := range t.Fields {
		if !f.Attr || given[i] < 0 || obj.vals[given[i]].kind == jNull {
			continue
		}
		dst = append(dst, ' ')
		dst = append(dst, f.Name...)
		dst = append(dst, `="`...)
		if dst, err = appendJSONScalar(dst, f, obj.vals[given[i]], join(path, f.JSONName()), true); err != nil {
			return dst, err
		}
		dst = append(dst, '"')
	}
	dst = append(dst, '>')
	for i, f := range t.Fields {
		if f.Attr {
			continue
		}
		if given[i] < 0 || obj.vals[given[i]].kind == jNull {
			if f.Wrapper != "" && !f.Optional {
				dst = append(appendStart(dst, f.Wrapper), "</"+f.Wrapper+">"...) // a required wrapper, empty
			}
			continue
		}
		v, p := obj.vals[given[i]], join(path, f.JSONName())
		if !f.Repeated {
			if dst, err = appendJSONElement(dst, f, v, p, opts); err != nil {
				return dst, err
			}
			continue
		}
		if v.kind != jArray {
			return dst, &JSONError{Path: p, Msg: "want an array of " + want(f) + ", got " + v.describe()}
		}
		if f.Wrapper != "" {
			dst = appendStart(dst, f.Wrapper)
		}
		for j, it := range v.items {
			if dst, err = appendJSONElement(dst, f, it, p+"["+strconv.Itoa(j)+"]", opts); err != nil {
				return dst, err
			}
		}
		if f.Wrapper != "" {
			dst = appendEnd(dst, f.Wrapper)
		}
	}
	return appendEnd(dst, t.Name), nil
}

// appendJSONElement writes one element of field f holding v.
func appendJSONElement(dst []byte, f gen.Field, v jvalue, path string, opts JSONOptions) ([]byte, error) {
	if f.Kind == gen.Struct && f.Struct != nil && !f.JSON {
		if v.kind != jObject {
			return dst, &JSONError{Path: path, Msg: "want an object, got " + v.describe()}
		}
		start := len(dst)
		dst = append(dst, '<')
		dst = append(dst, f.Name...)
		// The nested type's own Name may differ from the field's element
		// name: write the body against a copy named for the field.
		sub := *f.Struct
		sub.Name = f.Name
		out, err := appendJSONBody(dst, &sub, v, path, opts)
		if err != nil {
			return dst[:start], err
		}
		return out, nil
	}
	dst = appendStart(dst, f.Name)
	dst, err := appendJSONScalar(dst, f, v, path, false)
	if err != nil {
		return dst, err
	}
	return appendEnd(dst, f.Name), nil
}

// appendJSONScalar writes the text of a simple value (escaped for an
// attribute or for character data), checked as the decoder will read it.
func appendJSONScalar(dst []byte, f gen.Field, v jvalue, path string, attr bool) ([]byte, error) {
	bad := func(msg string) error { return &JSONError{Path: path, Msg: msg} }
	if f.JSON {
		s := string(v.appendCompact(nil))
		if attr {
			return xmltext.AppendAttr(dst, s), nil
		}
		return xmltext.AppendText(dst, s), nil
	}
	var text string
	switch k := f.Kind; {
	case k == gen.String || k == gen.Time || k == gen.Bytes:
		if v.kind != jString {
			return dst, bad("want " + want(f) + ", got " + v.describe())
		}
		text = v.s
		if k == gen.String {
			for i, r := range text {
				if !xmltext.IsChar(r) {
					return dst, bad(fmt.Sprintf("character %U at byte %d is not allowed in XML", r, i))
				}
			}
		}
	case k.IsInteger():
		if v.kind != jNumber {
			return dst, bad("want " + want(f) + ", got " + v.describe())
		}
		var ok bool
		if text, ok = integerText(v.s); !ok {
			return dst, bad("want " + want(f) + ", got " + v.describe())
		}
	case k.IsFloat():
		if v.kind != jNumber {
			return dst, bad("want " + want(f) + ", got " + v.describe())
		}
		text = v.s
	case k == gen.Bool:
		if v.kind != jBool {
			return dst, bad("want " + want(f) + ", got " + v.describe())
		}
		text = strconv.FormatBool(v.b)
	default:
		return dst, bad("has no simple value")
	}
	rv := reflect.New(f.ValueType).Elem()
	if err := setScalar(&f, rv, []byte(text)); err != nil {
		switch {
		case errors.Is(err, errEnum):
			return dst, bad(fmt.Sprintf("%q is not one of %s", text, strings.Join(quoteAll(f.Enum), ", ")))
		case errors.Is(err, errRange):
			return dst, bad(fmt.Sprintf("%s is out of range for %s", text, f.Kind))
		}
		return dst, bad(fmt.Sprintf("%q is not %s: %v", text, want(f), err))
	}
	return appendScalar(dst, &f, rv, attr)
}

// integerText returns the decimal integer a JSON number denotes when it is
// one: digits, optionally with a fraction of zeros ("3.0", as some encoders
// write whole floats). Exponents are refused (no coercion of 1e3).
func integerText(s string) (string, bool) {
	if strings.ContainsAny(s, "eE") {
		return "", false
	}
	whole, frac, _ := strings.Cut(s, ".")
	if strings.Trim(frac, "0") != "" {
		return "", false
	}
	return whole, true
}

// matchMembers maps each field of t to the index of its member in obj (-1:
// absent), refusing unknown members and two members naming one field.
func matchMembers(t *gen.Type, obj jvalue, path string, fold bool) ([]int, error) {
	given := make([]int, len(t.Fields))
	for i := range given {
		given[i] = -1
	}
	var unknown []string
	for j, k := range obj.keys {
		i := fieldFor(t, k, fold)
		switch {
		case i < 0:
			unknown = append(unknown, strconv.Quote(k))
		case given[i] >= 0:
			return nil, &JSONError{Path: join(path, t.Fields[i].JSONName()),
				Msg: fmt.Sprintf("given twice (as %q and %q)", obj.keys[given[i]], k)}
		default:
			given[i] = j
		}
	}
	if len(unknown) > 0 {
		var names []string
		for _, f := range t.Fields {
			names = append(names, f.JSONName())
		}
		want := "it has no fields"
		if len(names) > 0 {
			want = "the fields are " + strings.Join(names, ", ")
		}
		slices.Sort(unknown)
		return nil, &JSONError{Path: path, Msg: fmt.Sprintf("unknown field %s (%s)", strings.Join(unknown, ", "), want)}
	}
	return given, nil
}

// fieldFor returns the index of the field key names, or -1.
func fieldFor(t *gen.Type, key string, fold bool) int {
	for i, f := range t.Fields {
		if f.JSONName() == key {
			return i
		}
	}
	if !fold {
		return -1
	}
	k := foldKey(key)
	for i, f := range t.Fields {
		if foldKey(f.JSONName()) == k || foldKey(f.Name) == k || foldKey(f.GoName) == k {
			return i
		}
	}
	return -1
}

// foldKey normalises a name for loose matching: lower case, without _ and -.
func foldKey(s string) string {
	return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(s))
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}

// want describes the JSON value field f takes (one item of a repeated field).
func want(f gen.Field) string {
	switch k := f.Kind; {
	case f.JSON:
		return "any JSON value"
	case k == gen.String:
		if len(f.Enum) > 0 {
			return "one of " + strings.Join(quoteAll(f.Enum), ", ")
		}
		return "a string"
	case k.IsUnsigned():
		return "a non-negative integer"
	case k.IsInteger():
		return "an integer"
	case k.IsFloat():
		return "a number"
	case k == gen.Bool:
		return "a boolean"
	case k == gen.Time:
		return "a date-time string"
	case k == gen.Bytes:
		return "a base64 string"
	case k == gen.Struct:
		return "an object"
	}
	return "a value"
}

// describe names a JSON value for an error message (scalars with their value).
func (v jvalue) describe() string {
	switch v.kind {
	case jNumber:
		return "the number " + v.s
	case jBool:
		return "the boolean " + strconv.FormatBool(v.b)
	case jString:
		if len(v.s) > 40 {
			return "a string"
		}
		return "the string " + strconv.Quote(v.s)
	}
	return v.kind.String()
}

// JSONOf returns the JSON form of a payload value v (a T or *T of t's Go
// type): an object of the fields that are present — set pointers, non-empty
// slices, non-zero omitempty fields and every other field — with native
// JSON values (numbers, booleans, strings, arrays, objects; an
// encoding:"json" field's text as the JSON it holds). It is AppendJSON's
// inverse for values the codec decoded.
func JSONOf(t *gen.Type, v any) (map[string]any, error) {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return nil, &JSONError{Msg: "nil payload"}
		}
		rv = rv.Elem()
	}
	if !rv.IsValid() || rv.Type() != t.GoType {
		return nil, &JSONError{Msg: fmt.Sprintf("got %T, want %s", v, t.GoType)}
	}
	return jsonObject(t, rv, "")
}

func jsonObject(t *gen.Type, rv reflect.Value, path string) (map[string]any, error) {
	out := map[string]any{}
	for _, f := range t.Fields {
		fv := rv.FieldByIndex(f.Index)
		p := join(path, f.JSONName())
		if f.Repeated {
			if fv.Len() == 0 {
				continue
			}
			items := make([]any, fv.Len())
			for i := range fv.Len() {
				x, err := jsonValue(f, fv.Index(i), p+"["+strconv.Itoa(i)+"]")
				if err != nil {
					return nil, err
				}
				items[i] = x
			}
			out[f.JSONName()] = items
			continue
		}
		if f.Pointer {
			if fv.IsNil() {
				continue
			}
			fv = fv.Elem()
		} else if f.OmitEmpty && fv.IsZero() {
			continue
		}
		x, err := jsonValue(f, fv, p)
		if err != nil {
			return nil, err
		}
		out[f.JSONName()] = x
	}
	return out, nil
}

func jsonValue(f gen.Field, v reflect.Value, path string) (any, error) {
	switch k := f.Kind; {
	case f.JSON:
		s := v.String()
		if !json.Valid([]byte(s)) {
			return nil, &JSONError{Path: path, Msg: "the text is not JSON"}
		}
		return json.RawMessage(s), nil
	case k == gen.String:
		return v.String(), nil
	case k.IsUnsigned():
		return v.Uint(), nil
	case k.IsInteger():
		return v.Int(), nil
	case k.IsFloat():
		x := v.Float()
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, &JSONError{Path: path, Msg: fmt.Sprintf("%v has no JSON form", x)}
		}
		return x, nil
	case k == gen.Bool:
		return v.Bool(), nil
	case k == gen.Time:
		return v.Interface().(time.Time).Format(time.RFC3339Nano), nil
	case k == gen.Bytes:
		return base64.StdEncoding.EncodeToString(v.Bytes()), nil
	case k == gen.Struct && f.Struct != nil:
		return jsonObject(f.Struct, v, path)
	}
	return nil, &JSONError{Path: path, Msg: "has no JSON form"}
}
