// Package fields builds payload types from field lists written as data: a
// root element with simple-typed children, as organism.yaml's payload: and
// response: write them, as a WASM module's describe export answers, or as an
// XSD of simple children declares them. The WASM listener and the
// federation's imported capabilities both type their payloads this way.
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
		tag := `xml:"` + fd.Name
		if fd.Optional {
			tag += ",omitempty"
		}
		tag += `"`
		if fd.Doc != "" {
			tag += ` doc:` + strconv.Quote(fd.Doc)
		}
		if len(fd.Enum) > 0 {
			if t.Kind() != reflect.String {
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
// element is a sequence (or all) of simple-typed children: the Go type the
// pump decodes into. The file itself stays the schema payloads are
// validated against. Anything richer is refused with a clear error.
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
	seq, err := sequenceOf(el)
	if err != nil {
		return List{}, err
	}
	for _, c := range seq {
		if c.XMLName.Local != "element" || c.Name == "" {
			return List{}, fmt.Errorf("%w: xsd: %s: only named child elements are supported", ErrContract, el.Name)
		}
		if c.MaxOccurs != "" && c.MaxOccurs != "1" {
			return List{}, fmt.Errorf("%w: xsd: %s.%s: repeated elements are not supported", ErrContract, el.Name, c.Name)
		}
		_, local, _ := strings.Cut(c.Type, ":")
		if local == "" {
			local = c.Type
		}
		t, ok := xsdTypes[local]
		if !ok {
			return List{}, fmt.Errorf("%w: xsd: %s.%s: type %q is not a supported simple type", ErrContract, el.Name, c.Name, c.Type)
		}
		f.Fields = append(f.Fields, Field{Name: c.Name, Type: t, Optional: c.MinOccurs == "0"})
	}
	return f, nil
}

// sequenceOf returns the children of el's complexType/sequence (or all).
func sequenceOf(el xsdNode) ([]xsdNode, error) {
	for _, ct := range el.Children {
		if ct.XMLName.Local != "complexType" {
			continue
		}
		if len(ct.Children) == 0 {
			return nil, nil
		}
		if len(ct.Children) == 1 && (ct.Children[0].XMLName.Local == "sequence" || ct.Children[0].XMLName.Local == "all") {
			return ct.Children[0].Children, nil
		}
	}
	return nil, fmt.Errorf("%w: xsd: element %s: want a complexType with a sequence of simple elements", ErrContract, el.Name)
}
