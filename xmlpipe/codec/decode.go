package codec

import (
	"fmt"
	"reflect"
	"strconv"
	"sync"
)

// decoderPool recycles scanners and their scratch buffers between Decode calls.
var decoderPool = sync.Pool{New: func() any { return new(scanner) }}

// maxQuoted bounds how much of an invalid value an error message quotes.
const maxQuoted = 64

// Decode parses payload XML (the exclusive-C14N bytes of the payload element,
// normally already XSD-valid) into a new *T and returns it. Any mismatch with
// the model — another root, an unknown or repeated element or attribute, a
// missing required one, text where elements belong, a value that is not valid
// for its type or does not fit the Go type — is an error wrapping ErrDecode
// whose text names the element path.
func (c *Codec) Decode(b []byte) (any, error) {
	s := decoderPool.Get().(*scanner)
	s.reset(b, c.typ.Namespace)
	rv := reflect.New(c.typ.GoType)
	err := c.document(s, rv.Elem())
	s.release()
	decoderPool.Put(s)
	if err != nil {
		return nil, err
	}
	return rv.Interface(), nil
}

// document decodes the whole input: prolog, root element, epilog.
func (c *Codec) document(s *scanner, v reflect.Value) error {
	root := c.typ.Name
	if err := s.prolog(); err != nil {
		return atPath(err, root)
	}
	class, local, qname, empty, err := s.startTag()
	if err != nil {
		return atPath(err, root)
	}
	if class != nsPayload || string(local) != root {
		return atPath(decodeErr(fmt.Sprintf("root element is <%s>%s, want <%s>%s", qname, nsNote(class), root, nsWant(c.typ.Namespace)), nil), root)
	}
	if err := decodeStruct(s, c.root, v, qname, empty); err != nil {
		return atPath(err, root)
	}
	if err := s.epilog(); err != nil {
		return atPath(err, root)
	}
	return nil
}

// nsNote describes a namespace mismatch for error messages.
func nsNote(class nsClass) string {
	if class != nsPayload {
		return " in another namespace"
	}
	return ""
}

func nsWant(ns string) string {
	if ns == "" {
		return " in no namespace"
	}
	return " in " + ns
}

// presence records which fields of one struct element have been seen.
type presence struct {
	bits uint64
	more []bool // slots 64 and up, for very wide structs
}

func (p *presence) set(slot int) {
	if slot < 64 {
		p.bits |= 1 << slot
		return
	}
	i := slot - 64
	if i >= len(p.more) {
		p.more = append(p.more, make([]bool, i-len(p.more)+1)...)
	}
	p.more[i] = true
}

func (p *presence) has(slot int) bool {
	if slot < 64 {
		return p.bits&(1<<slot) != 0
	}
	return slot-64 < len(p.more) && p.more[slot-64]
}

// decodeStruct decodes the attributes and content of a struct element whose
// start tag has just been read.
func decodeStruct(s *scanner, p *structPlan, v reflect.Value, qname []byte, empty bool) error {
	var seen presence
	for i := range s.attrs {
		a := &s.attrs[i]
		if a.isDecl() {
			continue
		}
		if len(a.prefix) != 0 {
			class, err := s.resolve(a.prefix)
			if err != nil {
				return err
			}
			if class == nsXSI {
				continue
			}
			return decodeErr(fmt.Sprintf("unexpected attribute %s:%s", a.prefix, a.local), nil)
		}
		fp := p.attr(a.local)
		if fp == nil {
			return decodeErr(fmt.Sprintf("unexpected attribute %s", a.local), nil)
		}
		fv := fp.field(v)
		if fp.Pointer {
			ptr := reflect.New(fp.ValueType)
			fv.Set(ptr)
			fv = ptr.Elem()
		}
		if err := setScalar(fp.Field, fv, a.value); err != nil {
			return atPath(invalidValue(fp, a.value, err), "@"+fp.Name)
		}
		seen.set(fp.slot)
	}
	if empty {
		s.closeEmpty()
	} else {
		for {
			txt, err := s.text()
			if err != nil {
				return err
			}
			if !allSpace(txt) {
				return decodeErr(fmt.Sprintf("unexpected text %s", quote(txt)), nil)
			}
			if s.atEndTag() {
				if err := s.endTag(qname); err != nil {
					return err
				}
				break
			}
			class, local, cq, cempty, err := s.startTag()
			if err != nil {
				return err
			}
			fp := p.elem(local)
			if class != nsPayload || fp == nil {
				return decodeErr(fmt.Sprintf("unexpected element <%s>%s", cq, nsNote(class)), nil)
			}
			if !fp.Repeated && seen.has(fp.slot) {
				return decodeErr(fmt.Sprintf("element <%s> repeated", cq), nil)
			}
			if err := decodeField(s, fp, fp.field(v), cq, cempty); err != nil {
				return err
			}
			seen.set(fp.slot)
		}
	}
	if p.required == 0 {
		return nil
	}
	for _, fps := range [2][]*fieldPlan{p.elems, p.attrs} {
		for _, fp := range fps {
			if fp.required && !seen.has(fp.slot) {
				if fp.Attr {
					return decodeErr(fmt.Sprintf("missing attribute %s", fp.Name), nil)
				}
				return decodeErr(fmt.Sprintf("missing element <%s>", fp.segment), nil)
			}
		}
	}
	return nil
}

// decodeField decodes the element(s) of one field whose start tag (the wrapper's,
// for wrapped fields) has just been read.
func decodeField(s *scanner, fp *fieldPlan, fv reflect.Value, qname []byte, empty bool) error {
	switch {
	case fp.Wrapper != "":
		if err := noAttrs(s); err != nil {
			return atPath(err, fp.Wrapper)
		}
		if empty {
			s.closeEmpty()
			return nil
		}
		for {
			txt, err := s.text()
			if err != nil {
				return atPath(err, fp.Wrapper)
			}
			if !allSpace(txt) {
				return atPath(decodeErr(fmt.Sprintf("unexpected text %s", quote(txt)), nil), fp.Wrapper)
			}
			if s.atEndTag() {
				return atPath(s.endTag(qname), fp.Wrapper)
			}
			class, local, cq, cempty, err := s.startTag()
			if err != nil {
				return atPath(err, fp.Wrapper)
			}
			if class != nsPayload || string(local) != fp.Name {
				return atPath(decodeErr(fmt.Sprintf("unexpected element <%s>%s, want <%s>", cq, nsNote(class), fp.Name), nil), fp.Wrapper)
			}
			item, n := grow(fv)
			if err := decodeValue(s, fp, item, cq, cempty); err != nil {
				return atPath(atPath(err, fp.Name+"["+strconv.Itoa(n)+"]"), fp.Wrapper)
			}
		}
	case fp.Repeated:
		item, n := grow(fv)
		if err := decodeValue(s, fp, item, qname, empty); err != nil {
			return atPath(err, fp.Name+"["+strconv.Itoa(n)+"]")
		}
		return nil
	case fp.Pointer:
		ptr := reflect.New(fp.ValueType)
		fv.Set(ptr)
		return atPath(decodeValue(s, fp, ptr.Elem(), qname, empty), fp.Name)
	default:
		return atPath(decodeValue(s, fp, fv, qname, empty), fp.Name)
	}
}

// grow appends a zero item to slice fv and returns it with its 1-based index.
func grow(fv reflect.Value) (reflect.Value, int) {
	n := fv.Len()
	fv.Grow(1)
	fv.SetLen(n + 1)
	item := fv.Index(n)
	item.SetZero()
	return item, n + 1
}

// decodeValue decodes one element holding a value of fp (a struct, or a simple
// value as character data).
func decodeValue(s *scanner, fp *fieldPlan, v reflect.Value, qname []byte, empty bool) error {
	if fp.sub != nil {
		return decodeStruct(s, fp.sub, v, qname, empty)
	}
	if err := noAttrs(s); err != nil {
		return err
	}
	var txt []byte
	if empty {
		s.closeEmpty()
	} else {
		var err error
		if txt, err = s.text(); err != nil {
			return err
		}
		if !s.atEndTag() {
			return decodeErr("unexpected child element in a simple value", nil)
		}
		if err := s.endTag(qname); err != nil {
			return err
		}
	}
	if err := setScalar(fp.Field, v, txt); err != nil {
		return invalidValue(fp, txt, err)
	}
	return nil
}

// noAttrs rejects attributes (other than namespace declarations and xsi:*) on
// an element that has none in the model.
func noAttrs(s *scanner) error {
	for i := range s.attrs {
		a := &s.attrs[i]
		if a.isDecl() {
			continue
		}
		if len(a.prefix) != 0 {
			if class, err := s.resolve(a.prefix); err != nil {
				return err
			} else if class == nsXSI {
				continue
			}
		}
		return decodeErr(fmt.Sprintf("unexpected attribute %s", attrName(a)), nil)
	}
	return nil
}

func attrName(a *rawAttr) string {
	if len(a.prefix) != 0 {
		return string(a.prefix) + ":" + string(a.local)
	}
	return string(a.local)
}

// invalidValue reports a value that is not valid for its field.
func invalidValue(fp *fieldPlan, txt []byte, cause error) error {
	what := fp.Kind.String()
	if len(fp.Enum) > 0 {
		what = fmt.Sprintf("enumeration %q", fp.Enum)
	}
	return decodeErr(fmt.Sprintf("invalid %s value %s", what, quote(txt)), cause)
}

// quote renders a value for an error message, truncated.
func quote(b []byte) string {
	if len(b) > maxQuoted {
		return strconv.Quote(string(b[:maxQuoted])) + "…"
	}
	return strconv.Quote(string(b))
}

// allSpace reports whether b holds only XML whitespace.
func allSpace(b []byte) bool {
	for _, c := range b {
		if !isXMLSpace(c) {
			return false
		}
	}
	return true
}
