package codec

import (
	"encoding/base64"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/xml-pipeline/xmlpipe/gen"
	"github.com/xml-pipeline/xmlpipe/gen/xmltext"
)

// minAppendRoom is the room Append makes in dst before it encodes (when dst
// has less): most payloads fit, and a new buffer is allocated once.
const minAppendRoom = 192

// Append encodes v (a T or a non-nil *T of the codec's type) as payload XML
// onto dst. The output is compact and well-formed. emptyNS=true writes
// xmlns="" on the root of a type without a namespace (needed when the payload
// sits inside the envelope's default namespace); a namespaced type always
// writes xmlns="its namespace". Nil pointers and omitempty zero values are
// omitted; an empty slice writes no element, or an empty wrapper.
func (c *Codec) Append(dst []byte, v any, emptyNS bool) ([]byte, error) {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer && rv.Type().Elem() == c.typ.GoType {
		if rv.IsNil() {
			return dst, fmt.Errorf("%w: %s: nil pointer", ErrEncode, c.typ.Name)
		}
		rv = rv.Elem()
	}
	if !rv.IsValid() || rv.Type() != c.typ.GoType {
		return dst, fmt.Errorf("%w: %s: got %T, want %s or *%[4]s", ErrEncode, c.typ.Name, v, c.typ.GoType)
	}
	if cap(dst)-len(dst) < minAppendRoom {
		// One allocation for a small payload instead of a doubling per tag.
		dst = slices.Grow(dst, minAppendRoom+2*len(c.typ.Name))
	}
	start := len(dst)
	dst = append(dst, '<')
	dst = append(dst, c.typ.Name...)
	switch {
	case c.typ.Namespace != "":
		dst = append(dst, ` xmlns="`...)
		dst = xmltext.AppendAttr(dst, c.typ.Namespace)
		dst = append(dst, '"')
	case emptyNS:
		dst = append(dst, ` xmlns=""`...)
	}
	dst, err := appendStructBody(dst, c.root, rv, c.typ.Name)
	if err != nil {
		return dst[:start], fmt.Errorf("%w: %s: %w", ErrEncode, c.typ.Name, err)
	}
	return dst, nil
}

// appendStructBody writes the attributes, the rest of the start tag, the
// children and the end tag of struct value v (the start tag's "<name" and any
// namespace declaration are already written).
func appendStructBody(dst []byte, p *structPlan, v reflect.Value, name string) ([]byte, error) {
	var err error
	for _, fp := range p.attrs {
		fv, ok := present(fp, fp.field(v))
		if !ok {
			continue
		}
		dst = append(dst, ' ')
		dst = append(dst, fp.Name...)
		dst = append(dst, `="`...)
		if dst, err = appendScalar(dst, fp.Field, fv, true); err != nil {
			return dst, fmt.Errorf("%s: %w", fp.Name, err)
		}
		dst = append(dst, '"')
	}
	dst = append(dst, '>')
	for _, fp := range p.elems {
		fv := fp.field(v)
		if dst, err = appendField(dst, fp, fv); err != nil {
			return dst, fmt.Errorf("%s: %w", fp.segment, err)
		}
	}
	return appendEnd(dst, name), nil
}

// appendField writes the element(s) of one field.
func appendField(dst []byte, fp *fieldPlan, fv reflect.Value) ([]byte, error) {
	var err error
	if fp.Repeated {
		n := fv.Len()
		if fp.Wrapper != "" {
			if n == 0 && fp.OmitEmpty {
				return dst, nil
			}
			dst = appendStart(dst, fp.Wrapper)
		}
		for i := range n {
			if dst, err = appendValue(dst, fp, fv.Index(i)); err != nil {
				return dst, fmt.Errorf("%s[%d]: %w", fp.Name, i+1, err)
			}
		}
		if fp.Wrapper != "" {
			dst = appendEnd(dst, fp.Wrapper)
		}
		return dst, nil
	}
	fv, ok := present(fp, fv)
	if !ok {
		return dst, nil
	}
	return appendValue(dst, fp, fv)
}

// present resolves a singular field's pointer and reports whether it is written.
func present(fp *fieldPlan, fv reflect.Value) (reflect.Value, bool) {
	if fp.Pointer {
		if fv.IsNil() {
			return fv, false
		}
		return fv.Elem(), true
	}
	if fp.OmitEmpty && fv.IsZero() {
		return fv, false
	}
	return fv, true
}

// appendValue writes one element of fp holding value fv.
func appendValue(dst []byte, fp *fieldPlan, fv reflect.Value) ([]byte, error) {
	if fp.sub != nil {
		dst = append(dst, '<')
		dst = append(dst, fp.Name...)
		return appendStructBody(dst, fp.sub, fv, fp.Name)
	}
	dst = appendStart(dst, fp.Name)
	dst, err := appendScalar(dst, fp.Field, fv, false)
	if err != nil {
		return dst, err
	}
	return appendEnd(dst, fp.Name), nil
}

func appendStart(dst []byte, name string) []byte {
	dst = append(dst, '<')
	dst = append(dst, name...)
	return append(dst, '>')
}

func appendEnd(dst []byte, name string) []byte {
	dst = append(dst, "</"...)
	dst = append(dst, name...)
	return append(dst, '>')
}

// appendScalar writes the lexical form of a simple value, escaped for an
// attribute or for character data.
func appendScalar(dst []byte, f *gen.Field, v reflect.Value, attr bool) ([]byte, error) {
	k := f.Kind
	switch {
	case k == gen.String:
		s := v.String()
		if !enumHas(f.Enum, s) {
			return dst, fmt.Errorf("%q: %w %q", s, errEnum, f.Enum)
		}
		if attr {
			return xmltext.AppendAttr(dst, s), nil
		}
		return xmltext.AppendText(dst, s), nil
	case k.IsUnsigned():
		return strconv.AppendUint(dst, v.Uint(), 10), nil
	case k.IsInteger():
		return strconv.AppendInt(dst, v.Int(), 10), nil
	case k.IsFloat():
		return appendFloat(dst, v.Float(), k.BitSize()), nil
	case k == gen.Bool:
		if v.Bool() {
			return append(dst, "true"...), nil
		}
		return append(dst, "false"...), nil
	case k == gen.Time:
		out, err := appendTime(dst, v.Interface().(time.Time))
		if err != nil {
			return dst, fmt.Errorf("%v: %w", v.Interface(), err)
		}
		return out, nil
	case k == gen.Bytes:
		return base64.StdEncoding.AppendEncode(dst, v.Bytes()), nil
	}
	return dst, fmt.Errorf("kind %v is not a simple kind", k)
}
