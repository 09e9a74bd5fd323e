package gen

import (
	"encoding/xml"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"
)

var (
	xmlNameType = reflect.TypeFor[xml.Name]()
	timeType    = reflect.TypeFor[time.Time]()
)

// describeResult is one cache entry: the model or the error building it failed with.
type describeResult struct {
	t   *Type
	err error
}

// describeCache maps a struct reflect.Type to its describeResult.
var describeCache sync.Map

// Describe returns the model of the payload struct type t (a pointer to a struct
// is accepted). Results, errors included, are cached; Describe is safe for
// concurrent use. Every failure wraps ErrUnsupported and names the type and the
// field path, e.g. "gen: Order.Meta: map[string]int is not supported (…)".
func Describe(t reflect.Type) (*Type, error) {
	if t == nil {
		return nil, &describeError{path: "<nil>", msg: "a nil type is not a payload type"}
	}
	if t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil, &describeError{path: t.String(), msg: fmt.Sprintf("%s is not supported (a payload must be a struct or a pointer to one)", t)}
	}
	if v, ok := describeCache.Load(t); ok {
		r := v.(describeResult)
		return r.t, r.err
	}
	root, err := newBuilder().root(t)
	v, _ := describeCache.LoadOrStore(t, describeResult{t: root, err: err})
	r := v.(describeResult)
	return r.t, r.err
}

// builder builds the model of one payload type and the nested types it uses.
type builder struct {
	// named maps a complex-type name to the Go type that owns it (clash detection).
	named map[string]reflect.Type
	// done memoises nested types already built for this payload.
	done map[reflect.Type]*Type
	// active holds the struct types being built (recursion detection).
	active map[reflect.Type]bool
}

func newBuilder() *builder {
	return &builder{
		named:  map[string]reflect.Type{},
		done:   map[reflect.Type]*Type{},
		active: map[reflect.Type]bool{},
	}
}

func (b *builder) root(t reflect.Type) (*Type, error) {
	path := t.Name()
	if path == "" {
		path = t.String()
	}
	ty := &Type{GoType: t, TypeName: t.Name()}
	if f, ok := t.FieldByName("XMLName"); ok && len(f.Index) == 1 && f.Type == xmlNameType {
		ns, local, _ := splitXMLNameTag(f.Tag.Get("xml"))
		if local != "" {
			ty.Name = local
		}
		ty.Namespace = ns
		var xf Field
		if err := parseJSONTags(&xf, f.Tag); err != nil || xf.JSON {
			if err == nil {
				err = errors.New(`encoding:"json" on XMLName`)
			}
			return nil, &describeError{path: path + ".XMLName", msg: err.Error()}
		}
		ty.Schema = xf.Schema
	}
	if ty.Name == "" {
		ty.Name = t.Name()
	}
	if ty.Name == "" {
		return nil, &describeError{path: path, msg: "an unnamed struct needs an XMLName field with a tag naming the root element"}
	}
	if !IsNCName(ty.Name) {
		return nil, &describeError{path: path, msg: fmt.Sprintf("root element name %q is not a valid XML name", ty.Name)}
	}
	if ty.TypeName == "" {
		ty.TypeName = ty.Name
	}
	if !IsNCName(ty.TypeName) {
		return nil, &describeError{path: path, msg: fmt.Sprintf("type name %q is not a valid XML name", ty.TypeName)}
	}
	if strings.ContainsAny(ty.Namespace, " \t\r\n") {
		return nil, &describeError{path: path, msg: fmt.Sprintf("namespace %q contains whitespace", ty.Namespace)}
	}
	b.named[ty.TypeName] = t
	b.active[t] = true
	fields, err := b.fields(t, nil, path)
	if err != nil {
		return nil, err
	}
	ty.Fields = fields
	return ty, nil
}

// splitXMLNameTag splits an XMLName tag "ns local,opts" into namespace and local name.
func splitXMLNameTag(tag string) (ns, local, opts string) {
	name, opts, _ := strings.Cut(tag, ",")
	if i := strings.LastIndexByte(name, ' '); i >= 0 {
		return strings.TrimSpace(name[:i]), name[i+1:], opts
	}
	return "", name, opts
}

// nested returns the model of a struct type used by a field, building it once.
func (b *builder) nested(t reflect.Type, path string) (*Type, error) {
	if b.active[t] {
		return nil, &describeError{path: path, msg: fmt.Sprintf("recursive type %s is not supported", t)}
	}
	if ty, ok := b.done[t]; ok {
		return ty, nil
	}
	name := t.Name()
	if name != "" {
		if !IsNCName(name) {
			return nil, &describeError{path: path, msg: fmt.Sprintf("type name %q of %s is not a valid XML name", name, t)}
		}
		if other, ok := b.named[name]; ok && other != t {
			return nil, &describeError{path: path, msg: fmt.Sprintf("name clash: %s and %s both map to complex type %q", other, t, name)}
		}
		b.named[name] = t
	}
	b.active[t] = true
	defer delete(b.active, t)
	fields, err := b.fields(t, nil, path)
	if err != nil {
		return nil, err
	}
	ty := &Type{GoType: t, Name: name, TypeName: name, Fields: fields}
	b.done[t] = ty
	return ty, nil
}

// fields models the fields of struct t, promoting embedded structs in place.
// prefix is the index path of t inside the outermost struct.
func (b *builder) fields(t reflect.Type, prefix []int, path string) ([]Field, error) {
	var out []Field
	for i := range t.NumField() {
		sf := t.Field(i)
		index := append(append([]int(nil), prefix...), i)
		tag, hasTag := sf.Tag.Lookup("xml")
		if tag == "-" || (sf.Name == "XMLName" && sf.Type == xmlNameType) {
			continue
		}
		tagName, _, _ := strings.Cut(tag, ",")
		if sf.Anonymous && tagName == "" {
			et := sf.Type
			if et.Kind() == reflect.Pointer {
				if !sf.IsExported() && et.Elem().Kind() == reflect.Struct {
					continue
				}
				return nil, &describeError{path: path + "." + sf.Name, msg: fmt.Sprintf("embedded pointer %s is not supported (embed the struct by value)", et)}
			}
			if et.Kind() == reflect.Struct && et != timeType {
				if hasTag && tag != "" {
					return nil, &describeError{path: path + "." + sf.Name, msg: fmt.Sprintf("xml tag %q on an embedded struct is not supported", tag)}
				}
				sub, err := b.fields(et, index, path+"."+sf.Name)
				if err != nil {
					return nil, err
				}
				out = append(out, sub...)
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		f, err := b.field(sf, index, path+"."+sf.Name)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	if err := checkDuplicates(out, path); err != nil {
		return nil, err
	}
	return out, nil
}

// field models one exported struct field.
func (b *builder) field(sf reflect.StructField, index []int, path string) (Field, error) {
	f := Field{GoName: sf.Name, Index: index, GoType: sf.Type, Doc: sf.Tag.Get("doc")}
	if err := parseFieldTag(&f, sf.Tag.Get("xml")); err != nil {
		return Field{}, &describeError{path: path, msg: err.Error()}
	}
	if f.Name == "" {
		f.Name = sf.Name
	}
	if !IsNCName(f.Name) {
		return Field{}, &describeError{path: path, msg: fmt.Sprintf("name %q is not a valid XML name", f.Name)}
	}
	if f.Wrapper != "" && !IsNCName(f.Wrapper) {
		return Field{}, &describeError{path: path, msg: fmt.Sprintf("wrapper name %q is not a valid XML name", f.Wrapper)}
	}

	vt := sf.Type
	if vt.Kind() == reflect.Pointer {
		f.Pointer = true
		vt = vt.Elem()
		if vt.Kind() == reflect.Pointer {
			return Field{}, unsupported(path, sf.Type, "pointers to pointers have no XML form")
		}
		if vt.Kind() == reflect.Slice && !isBytes(vt) {
			return Field{}, unsupported(path, sf.Type, "use a slice, which may already be empty, instead of a pointer to one")
		}
	}
	if vt.Kind() == reflect.Slice && !isBytes(vt) {
		f.Repeated = true
		vt = vt.Elem()
		switch {
		case vt.Kind() == reflect.Pointer:
			return Field{}, unsupported(path, sf.Type, "slices of pointers are not supported; use a slice of values")
		case vt.Kind() == reflect.Slice && !isBytes(vt):
			return Field{}, unsupported(path, sf.Type, "nested slices have no element name for the inner items; use a slice of structs")
		}
	}
	f.ValueType = vt
	k, reason := kindOf(vt)
	if k == Invalid {
		return Field{}, unsupported(path, sf.Type, reason)
	}
	f.Kind = k
	f.Optional = f.Pointer || f.OmitEmpty

	switch {
	case f.Wrapper != "" && !f.Repeated:
		return Field{}, &describeError{path: path, msg: fmt.Sprintf("wrapper tag %q needs a slice field, not %s", f.Wrapper+">"+f.Name, sf.Type)}
	case f.Attr && f.Repeated:
		return Field{}, &describeError{path: path, msg: fmt.Sprintf("attribute of slice type %s is not supported", sf.Type)}
	case f.Attr && k == Struct:
		return Field{}, &describeError{path: path, msg: fmt.Sprintf("attribute of struct type %s is not supported", sf.Type)}
	}

	if enum, ok := sf.Tag.Lookup("enum"); ok {
		if k != String {
			return Field{}, &describeError{path: path, msg: fmt.Sprintf("enum tag on %s is not supported (string kinds only)", sf.Type)}
		}
		if enum == "" {
			return Field{}, &describeError{path: path, msg: "enum tag is empty"}
		}
		f.Enum = strings.Split(enum, "|")
		seen := map[string]bool{}
		for _, v := range f.Enum {
			if seen[v] {
				return Field{}, &describeError{path: path, msg: fmt.Sprintf("enum value %q is repeated", v)}
			}
			seen[v] = true
		}
	}

	if err := parseJSONTags(&f, sf.Tag); err != nil {
		return Field{}, &describeError{path: path, msg: err.Error()}
	}

	if k == Struct {
		st, err := b.nested(vt, path)
		if err != nil {
			return Field{}, err
		}
		f.Struct = st
	}
	return f, nil
}

// parseFieldTag applies an xml struct tag to f.
func parseFieldTag(f *Field, tag string) error {
	name, opts, _ := strings.Cut(tag, ",")
	for opt := range strings.SplitSeq(opts, ",") {
		switch opt {
		case "":
		case "attr":
			f.Attr = true
		case "omitempty":
			f.OmitEmpty = true
		default:
			return fmt.Errorf("xml tag option %q is not supported", opt)
		}
	}
	if strings.ContainsAny(name, " \t") {
		return fmt.Errorf("xml tag %q: per-field namespaces are not supported (set the namespace on XMLName)", tag)
	}
	if wrapper, item, ok := strings.Cut(name, ">"); ok {
		if f.Attr {
			return fmt.Errorf("xml tag %q: an attribute cannot have a wrapper", tag)
		}
		if wrapper == "" || item == "" || strings.Contains(item, ">") {
			return fmt.Errorf("xml tag %q: only one wrapper level A>B is supported", tag)
		}
		f.Wrapper, name = wrapper, item
	}
	f.Name = name
	return nil
}

// isBytes reports a []byte-like slice (element kind uint8).
func isBytes(t reflect.Type) bool {
	return t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8
}

// kindOf maps a Go value type to a Kind, or Invalid and the reason it has no XSD form.
func kindOf(t reflect.Type) (Kind, string) {
	if t == timeType {
		return Time, ""
	}
	switch t.Kind() {
	case reflect.String:
		return String, ""
	case reflect.Int:
		return Int, ""
	case reflect.Int8:
		return Int8, ""
	case reflect.Int16:
		return Int16, ""
	case reflect.Int32:
		return Int32, ""
	case reflect.Int64:
		return Int64, ""
	case reflect.Uint:
		return Uint, ""
	case reflect.Uint8:
		return Uint8, ""
	case reflect.Uint16:
		return Uint16, ""
	case reflect.Uint32:
		return Uint32, ""
	case reflect.Uint64:
		return Uint64, ""
	case reflect.Float32:
		return Float32, ""
	case reflect.Float64:
		return Float64, ""
	case reflect.Bool:
		return Bool, ""
	case reflect.Struct:
		return Struct, ""
	case reflect.Slice:
		if isBytes(t) {
			return Bytes, ""
		}
		return Invalid, "nested slices are not supported"
	case reflect.Map:
		return Invalid, "maps have no XSD mapping; use a slice of key/value structs"
	case reflect.Interface:
		return Invalid, "interfaces have no fixed schema"
	case reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return Invalid, "it has no XML form"
	case reflect.Complex64, reflect.Complex128:
		return Invalid, "complex numbers have no XSD type; use a struct of two floats"
	case reflect.Uintptr:
		return Invalid, "uintptr is a machine address, not data"
	case reflect.Array:
		return Invalid, "arrays are not supported; use a slice"
	}
	return Invalid, "it has no XSD mapping"
}

// unsupported reports a Go type with no XSD form at path.
func unsupported(path string, t reflect.Type, reason string) error {
	return &describeError{path: path, msg: fmt.Sprintf("%s is not supported (%s)", t, reason)}
}

// checkDuplicates rejects two child elements or two attributes with one name.
func checkDuplicates(fields []Field, path string) error {
	elems := map[string]string{}
	attrs := map[string]string{}
	for _, f := range fields {
		seen, name := elems, f.Name
		switch {
		case f.Attr:
			seen = attrs
		case f.Wrapper != "":
			name = f.Wrapper
		}
		if prev, ok := seen[name]; ok {
			return &describeError{path: path, msg: fmt.Sprintf("fields %s and %s both map to %q", prev, f.GoName, name)}
		}
		seen[name] = f.GoName
	}
	return nil
}
