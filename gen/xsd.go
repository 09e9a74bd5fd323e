package gen

// xsNamespace is the XML Schema namespace, bound to the xs prefix.
const xsNamespace = "http://www.w3.org/2001/XMLSchema"

// XSD returns the schema of payload type t, pretty-printed with a 2-space indent
// and a final newline, without an XML declaration. The output is deterministic.
//
// For a type without a namespace it has exactly the shape the Python reference
// generates: xs:schema with id and elementFormDefault="qualified", one named
// complexType per struct type (dependencies first, the payload type last), each
// an xs:sequence of the field elements followed by the attributes, then the
// global element. A namespaced type adds targetNamespace and xmlns:tns and
// refers to its complex types as tns:Name.
func XSD(t *Type) []byte {
	s := xsdSchema{prefix: ""}
	schema := elem("xs:schema", "xmlns:xs", xsNamespace)
	if t.Namespace != "" {
		s.prefix = "tns:"
		schema.set("xmlns:tns", t.Namespace).set("targetNamespace", t.Namespace)
	}
	schema.set("id", t.Name).set("elementFormDefault", "qualified")
	for _, nt := range namedTypes(t) {
		schema.add(s.complexType(nt).set("name", nt.TypeName))
	}
	// The root's complex type comes last, after everything it uses.
	schema.add(s.complexType(t).set("name", t.TypeName))
	schema.add(elem("xs:element", "name", t.Name, "type", s.prefix+t.TypeName))
	return schema.pretty()
}

// xsdSchema renders the pieces of one schema; prefix qualifies references to
// the schema's own complex types ("" or "tns:").
type xsdSchema struct{ prefix string }

// namedTypes lists the named struct types t uses, each once, every type after
// the types it uses (depth-first post-order in field order), t itself excluded.
func namedTypes(t *Type) []*Type {
	var out []*Type
	seen := map[*Type]bool{t: true}
	var visit func(*Type)
	visit = func(ty *Type) {
		for i := range ty.Fields {
			st := ty.Fields[i].Struct
			if st == nil || seen[st] {
				continue
			}
			seen[st] = true
			visit(st)
			if st.TypeName != "" {
				out = append(out, st)
			}
		}
	}
	visit(t)
	return out
}

// complexType renders the body of ty's complex type (the caller names it).
func (s xsdSchema) complexType(ty *Type) *node {
	ct := elem("xs:complexType")
	seq := elem("xs:sequence")
	ct.add(seq)
	for i := range ty.Fields {
		f := &ty.Fields[i]
		if f.Attr {
			continue
		}
		seq.add(s.element(f))
	}
	for i := range ty.Fields {
		f := &ty.Fields[i]
		if !f.Attr {
			continue
		}
		ct.add(s.attribute(f))
	}
	return ct
}

// element renders the xs:element of a field (with its wrapper, if any).
func (s xsdSchema) element(f *Field) *node {
	item := elem("xs:element", "name", f.Name)
	s.typeOf(item, f)
	if f.Wrapper == "" {
		if f.Optional || f.Repeated {
			item.set("minOccurs", "0")
		}
		if f.Repeated {
			item.set("maxOccurs", "unbounded")
		}
		return withDoc(item, f.Doc)
	}
	item.set("minOccurs", "0").set("maxOccurs", "unbounded")
	wrapper := elem("xs:element", "name", f.Wrapper)
	if f.Optional {
		wrapper.set("minOccurs", "0")
	}
	withDoc(wrapper, f.Doc)
	return wrapper.add(elem("xs:complexType").add(elem("xs:sequence").add(item)))
}

// attribute renders the xs:attribute of a field.
func (s xsdSchema) attribute(f *Field) *node {
	a := elem("xs:attribute", "name", f.Name)
	s.typeOf(a, f)
	if !f.Optional {
		a.set("use", "required")
	}
	return withDoc(a, f.Doc)
}

// typeOf gives an xs:element or xs:attribute its type: a type attribute, or an
// inline xs:simpleType (enumerations) or xs:complexType (anonymous structs).
// Inline children are appended after any annotation by withDoc's insertion.
func (s xsdSchema) typeOf(n *node, f *Field) {
	switch {
	case len(f.Enum) > 0:
		r := elem("xs:restriction", "base", f.Kind.XSDType())
		for _, v := range f.Enum {
			r.add(elem("xs:enumeration", "value", v))
		}
		n.add(elem("xs:simpleType").add(r))
	case f.Kind == Struct && f.Struct.TypeName == "":
		n.add(s.complexType(f.Struct))
	case f.Kind == Struct:
		n.set("type", s.prefix+f.Struct.TypeName)
	default:
		n.set("type", f.Kind.XSDType())
	}
}

// withDoc puts an xs:annotation/xs:documentation first among n's children.
func withDoc(n *node, doc string) *node {
	if doc == "" {
		return n
	}
	ann := elem("xs:annotation").add(elem("xs:documentation").withText(doc))
	n.children = append([]*node{ann}, n.children...)
	return n
}
