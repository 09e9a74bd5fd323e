package wasm

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/xml-pipeline/xmlpipe/gen"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// Fields is a payload contract written as data: a root element with
// simple-typed children (organism.yaml's payload: and response:, or what a
// module's describe export writes).
type Fields struct {
	// Root is the root element name.
	Root string `yaml:"root"`
	// Fields are the children, in order.
	Fields []Field `yaml:"fields"`
}

// Field is one child element.
type Field struct {
	Name     string   `yaml:"name"`
	Type     string   `yaml:"type"` // string (default), integer, double, boolean
	Doc      string   `yaml:"doc"`
	Optional bool     `yaml:"optional"`
	Enum     []string `yaml:"enum"`
}

// Contract is what a module takes and answers.
type Contract struct {
	// Payload is the input contract.
	Payload Fields `yaml:"payload"`
	// Response is the output contract (empty: output routed by root tag).
	Response Fields `yaml:"response"`
}

// IsZero reports an empty field list.
func (f Fields) IsZero() bool { return f.Root == "" && len(f.Fields) == 0 }

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
func (f Fields) StructType() (reflect.Type, error) {
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
			tag += ` enum:` + strconv.Quote(strings.Join(fd.Enum, "|"))
		}
		sf = append(sf, reflect.StructField{Name: "F" + strconv.Itoa(i), Type: t, Tag: reflect.StructTag(tag)})
	}
	return reflect.StructOf(sf), nil
}

// PayloadType builds the payload type of the field list; schema, when not
// nil, replaces the derived XSD (an xsd: file).
func (f Fields) PayloadType(schema []byte) (*xmlpipe.PayloadType, error) {
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

// ParseContract reads a contract in YAML (what a describe export writes).
func ParseContract(b []byte) (Contract, error) {
	var c Contract
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		return Contract{}, fmt.Errorf("%w: %w", ErrContract, err)
	}
	if c.Payload.IsZero() {
		return Contract{}, fmt.Errorf("%w: no payload", ErrContract)
	}
	return c, nil
}

// xsdNode is the part of an XSD that FieldsFromXSD reads.
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

// FieldsFromXSD reads the field list of an XSD file whose one top-level
// element is a sequence (or all) of simple-typed children: the Go type the
// pump decodes into. The file itself stays the schema payloads are
// validated against. Anything richer is refused with a clear error.
func FieldsFromXSD(schema []byte) (Fields, error) {
	var root xsdNode
	if err := xml.Unmarshal(schema, &root); err != nil {
		return Fields{}, fmt.Errorf("%w: xsd: %w", ErrContract, err)
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
		return Fields{}, fmt.Errorf("%w: xsd: want one top-level xs:element in an xs:schema", ErrContract)
	}
	el := elems[0]
	f := Fields{Root: el.Name}
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
		return Fields{}, err
	}
	for _, c := range seq {
		if c.XMLName.Local != "element" || c.Name == "" {
			return Fields{}, fmt.Errorf("%w: xsd: %s: only named child elements are supported", ErrContract, el.Name)
		}
		if c.MaxOccurs != "" && c.MaxOccurs != "1" {
			return Fields{}, fmt.Errorf("%w: xsd: %s.%s: repeated elements are not supported", ErrContract, el.Name, c.Name)
		}
		_, local, _ := strings.Cut(c.Type, ":")
		if local == "" {
			local = c.Type
		}
		t, ok := xsdTypes[local]
		if !ok {
			return Fields{}, fmt.Errorf("%w: xsd: %s.%s: type %q is not a supported simple type", ErrContract, el.Name, c.Name, c.Type)
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
