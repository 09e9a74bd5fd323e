// Package fields builds payload types from field lists written as data: a
// root element with simple-typed children, each optional or repeated as it
// says, as organism.yaml's payload: and response: write them, as a WASM
// module's describe export answers, or as an XSD of such children declares
// them. The WASM listener and the federation's imported capabilities both
// type their payloads this way.
package fields

import (
	"encoding/xml"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/xml-pipeline/xmlpipe/gen"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// ErrContract means a field list (a payload or response contract) is
// malformed; every error of this package wraps it.
var ErrContract = errors.New("bad contract")

// List is a payload contract written as data: a root element with
// simple-typed children (organism.yaml's payload: and response:, what a WASM
// module's describe export writes, or what an XSD of simple children says).
type List struct {
	// Root is the root element name.
	Root string `yaml:"root"`
	// Fields are the children, in order.
	Fields []Field `yaml:"fields"`
}

// Field is one child element.
type Field struct {
	// Name is the element name.
	Name string `yaml:"name"`
	// Type is string (the default), integer, double or boolean.
	Type string `yaml:"type"`
	// Doc documents the field in the derived schema and prompt.
	Doc string `yaml:"doc"`
	// Optional lets the element be left out.
	Optional bool `yaml:"optional"`
	// Repeated lets the element occur any number of times (none too), its
	// values kept in the order they come: a Go slice of the field's type.
	Repeated bool `yaml:"repeated"`
	// Enum, for a string field, lists the values it may take.
	Enum []string `yaml:"enum"`
}

// IsZero reports an empty field list.
func (f List) IsZero() bool { return f.Root == "" && len(f.Fields) == 0 }

var goTypes = map[string]reflect.Type{
	"":        reflect.TypeFor[string](),
	"string":  reflect.TypeFor[string](),
	"integer": reflect.TypeFor[int64](),
	"double":  reflect.TypeFor[float64](),
	"boolean": reflect.TypeFor[bool](),
}

// StructType builds the Go struct type the field list describes (an unnamed
// struct whose XMLName is the root), so the payload's XSD, example and prompt
// are derived by gen like any other payload's.
func (f List) StructType() (reflect.Type, error) {
	if !gen.IsNCName(f.Root) {
		return nil, fmt.Errorf("%w: root %q is not an XML name", ErrContract, f.Root)
	}
	sf := []reflect.StructField{{Name: "XMLName", Type: reflect.TypeFor[xml.Name](),
		Tag: reflect.StructTag(`xml:"` + f.Root + `"`)}}
	seen := map[string]bool{}
	for i, fd := range f.Fields {
		if !gen.IsNCName(fd.Name) {
			return nil, fmt.Errorf("%w: %s field %d: %q is not an XML name", ErrContract, f.Root, i, fd.Name)
		}
		if seen[fd.Name] {
			return nil, fmt.Errorf("%w: %s: duplicate field %q", ErrContract, f.Root, fd.Name)
		}
		seen[fd.Name] = true
		t, ok := goTypes[strings.ToLower(fd.Type)]
		if !ok {
			return nil, fmt.Errorf("%w: %s.%s: unknown type %q (want string, integer, double or boolean)",
				ErrContract, f.Root, fd.Name, fd.Type)
		}
		switch {
		case fd.Repeated:
			t = reflect.SliceOf(t)
		case fd.Optional:
			// A pointer, not omitempty: a value given is kept, a 0, false
			// or "" too, and only an element left out is absent.
			t = reflect.PointerTo(t)
		}
		tag := `xml:"` + fd.Name + `"`
		if fd.Doc != "" {
			tag += ` doc:` + strconv.Quote(fd.Doc)
		}
		if len(fd.Enum) > 0 {
			if k := t.Kind(); k != reflect.String && ((k != reflect.Slice && k != reflect.Pointer) || t.Elem().Kind() != reflect.String) {
				return nil, fmt.Errorf("%w: %s.%s: only string fields take an enum", ErrContract, f.Root, fd.Name)
			}
			// The enum tag separates values with '|': a value holding one
			// would silently become two others.
			for _, v := range fd.Enum {
				if strings.Contains(v, "|") {
					return nil, fmt.Errorf("%w: %s.%s: enum value %q holds a '|'", ErrContract, f.Root, fd.Name, v)
				}
			}
			tag += ` enum:` + strconv.Quote(strings.Join(fd.Enum, "|"))
		}
		sf = append(sf, reflect.StructField{Name: "F" + strconv.Itoa(i), Type: t, Tag: reflect.StructTag(tag)})
	}
	return reflect.StructOf(sf), nil
}

// PayloadType builds the payload type of the field list; schema, when not
// nil, replaces the derived XSD (an xsd: file).
func (f List) PayloadType(schema []byte) (*xmlpipe.PayloadType, error) {
	t, err := f.StructType()
	if err != nil {
		return nil, err
	}
	var opts []xmlpipe.PayloadOption
	if schema != nil {
		opts = append(opts, xmlpipe.WithSchema(schema))
	}
	pt, err := xmlpipe.NewPayloadType(t, opts...)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrContract, f.Root, err)
	}
	return pt, nil
}

// xsdNode is the part of an XSD that FromXSD reads.
type xsdNode struct {
	XMLName   xml.Name
	Name      string    `xml:"name,attr"`
	Type      string    `xml:"type,attr"`
	MinOccurs string    `xml:"minOccurs,attr"`
	MaxOccurs string    `xml:"maxOccurs,attr"`
	Base      string    `xml:"base,attr"`
	Value     string    `xml:"value,attr"`
	Children  []xsdNode `xml:",any"`
}

var xsdTypes = map[string]string{
	"string": "string", "normalizedString": "string", "token": "string",
	"integer": "integer", "int": "integer", "long": "integer", "short": "integer",
	"nonNegativeInteger": "integer", "positiveInteger": "integer",
	"double": "double", "float": "double", "decimal": "double",
	"boolean": "boolean",
}

// FromXSD reads the field list of an XSD file whose one top-level
// element is a sequence (or all) of simple-typed children (a built-in
// type, or an inline xs:simpleType restricting one: a string enumeration
// is the field's enum), each optional (minOccurs 0) or repeated (maxOccurs
// above 1, or unbounded) as it declares: the Go type the pump decodes into. The file itself stays the
// schema payloads are validated against. Anything richer (nested or
// complex children, attributes, a repeated sequence, xs:choice) is refused
// with an error naming the element.
func FromXSD(schema []byte) (List, error) {
	var root xsdNode
	if err := xml.Unmarshal(schema, &root); err != nil {
		return List{}, fmt.Errorf("%w: xsd: %w", ErrContract, err)
	}
	var elems []xsdNode
	named := map[string]xsdNode{} // top-level complexTypes, as gen writes them
	for _, c := range root.Children {
		switch c.XMLName.Local {
		case "element":
			elems = append(elems, c)
		case "complexType":
			named[c.Name] = c
		}
	}
	if root.XMLName.Local != "schema" || len(elems) != 1 {
		return List{}, fmt.Errorf("%w: xsd: want one top-level xs:element in an xs:schema", ErrContract)
	}
	el := elems[0]
	f := List{Root: el.Name}
	if _, local, _ := strings.Cut(el.Type, ":"); el.Type != "" {
		if local == "" {
			local = el.Type
		}
		if ct, ok := named[local]; ok {
			el.Children = append(el.Children, ct) // type="T" names a top-level complexType
		}
	}
	group, err := sequenceOf(el)
	if err != nil {
		return List{}, err
	}
	// A group that repeats repeats its children together (A B A B): no
	// field list holds that, and reading one A and one B would lose the
	// rest of what a caller sent.
	if again, err := repeats(group.MaxOccurs); err != nil || again {
		return List{}, fmt.Errorf("%w: xsd: %s: a repeated %s (maxOccurs %q) is not supported: repeat its elements instead",
			ErrContract, el.Name, group.XMLName.Local, group.MaxOccurs)
	}
	for _, c := range group.Children {
		if c.XMLName.Local != "element" || c.Name == "" {
			return List{}, fmt.Errorf("%w: xsd: %s: only named child elements are supported", ErrContract, el.Name)
		}
		repeated, err := repeats(c.MaxOccurs)
		if err != nil {
			return List{}, fmt.Errorf("%w: xsd: %s.%s: %w", ErrContract, el.Name, c.Name, err)
		}
		fd, err := simpleField(c, named)
		if err != nil {
			return List{}, fmt.Errorf("%w: xsd: %s.%s: %w", ErrContract, el.Name, c.Name, err)
		}
		fd.Optional = c.MinOccurs == "0" || group.MinOccurs == "0" // an optional group leaves every child out
		fd.Repeated = repeated
		f.Fields = append(f.Fields, fd)
	}
	return f, nil
}

// simpleField reads the type of child element c: a built-in simple type
// named by its type attribute, or an inline xs:simpleType restricting one
// (an enumeration of strings becomes the field's enum; other facets stay
// the schema's to check). named are the schema's top-level complexTypes.
func simpleField(c xsdNode, named map[string]xsdNode) (Field, error) {
	local := localName(c.Type)
	if c.Type != "" {
		if _, ok := named[local]; ok {
			return Field{}, fmt.Errorf("type %q has child elements: nested elements are not supported", c.Type)
		}
		t, ok := xsdTypes[local]
		if !ok {
			return Field{}, fmt.Errorf("type %q is not a supported simple type", c.Type)
		}
		return Field{Name: c.Name, Type: t}, nil
	}
	for _, st := range c.Children {
		switch st.XMLName.Local {
		case "complexType":
			return Field{}, errors.New("an element with child elements or attributes: nested elements are not supported")
		case "simpleType":
			return restricted(c.Name, st)
		}
	}
	return Field{}, errors.New("no type: want a simple type (type=\"xs:string\", …) or an xs:simpleType")
}

// restricted reads the inline xs:simpleType st of element name: an
// xs:restriction of a built-in simple type, its enumeration values the
// field's enum when it is a string.
func restricted(name string, st xsdNode) (Field, error) {
	for _, r := range st.Children {
		if r.XMLName.Local != "restriction" {
			continue
		}
		t, ok := xsdTypes[localName(r.Base)]
		if !ok {
			return Field{}, fmt.Errorf("a restriction of %q, which is not a supported simple type", r.Base)
		}
		f := Field{Name: name, Type: t}
		if t != "string" {
			return f, nil // the schema checks its facets, enumerations too
		}
		for _, e := range r.Children {
			if e.XMLName.Local == "enumeration" {
				f.Enum = append(f.Enum, e.Value)
			}
		}
		return f, nil
	}
	return Field{}, errors.New("an xs:simpleType other than a restriction (a list or union) is not supported")
}

// localName is a QName's local part (xs:string: string).
func localName(qname string) string {
	if _, local, ok := strings.Cut(qname, ":"); ok {
		return local
	}
	return qname
}

// repeats reports whether an element whose maxOccurs is max may occur more
// than once (a bound above 1 or unbounded: the schema itself still holds
// the payload to its bounds). An element that may not occur at all, or a
// bound that is no number, is refused.
func repeats(max string) (bool, error) {
	switch max {
	case "", "1":
		return false, nil
	case "unbounded":
		return true, nil
	}
	n, err := strconv.ParseUint(strings.TrimSpace(max), 10, 64)
	switch {
	case err != nil:
		return false, fmt.Errorf("maxOccurs %q is not a number or unbounded", max)
	case n == 0:
		return false, fmt.Errorf("maxOccurs 0 (an element that may never occur) is not supported")
	}
	return n > 1, nil
}

// sequenceOf returns the xs:sequence (or xs:all) of el's complexType (an
// empty sequence for an empty complexType).
func sequenceOf(el xsdNode) (xsdNode, error) {
	for _, ct := range el.Children {
		if ct.XMLName.Local != "complexType" {
			continue
		}
		if len(ct.Children) == 0 {
			return xsdNode{XMLName: xml.Name{Local: "sequence"}}, nil
		}
		if len(ct.Children) == 1 && (ct.Children[0].XMLName.Local == "sequence" || ct.Children[0].XMLName.Local == "all") {
			return ct.Children[0], nil
		}
	}
	return xsdNode{}, fmt.Errorf("%w: xsd: element %s: want a complexType with a sequence of simple elements", ErrContract, el.Name)
}
