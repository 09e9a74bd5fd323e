package schemas

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"testing"
)

// decls is what the coverage tests need to know about one XSD.
type decls struct {
	targetNS           string
	elementFormDefault string
	globalElements     []string // in document order
	elements           []string // every xs:element name, global or local
	attributes         []string // every xs:attribute name
	enumerations       []string // every xs:enumeration value
}

// mustDecls reads the declarations of the embedded schema name.
func mustDecls(t *testing.T, name string) decls {
	t.Helper()
	b, ok := Fixed(name)
	if !ok {
		t.Fatalf("Fixed(%q) ok = false", name)
	}
	d, err := readDecls(b)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return d
}

// readDecls collects the declarations of an XSD document.
func readDecls(b []byte) (decls, error) {
	var d decls
	dec := xml.NewDecoder(bytes.NewReader(b))
	depth := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return d, nil
		}
		if err != nil {
			return d, err
		}
		switch el := tok.(type) {
		case xml.StartElement:
			depth++
			if el.Name.Space != xsNS {
				continue
			}
			switch el.Name.Local {
			case "schema":
				d.targetNS = attr(el, "targetNamespace")
				d.elementFormDefault = attr(el, "elementFormDefault")
			case "element":
				if name := attr(el, "name"); name != "" {
					d.elements = append(d.elements, name)
					if depth == 2 {
						d.globalElements = append(d.globalElements, name)
					}
				}
			case "attribute":
				if name := attr(el, "name"); name != "" {
					d.attributes = append(d.attributes, name)
				}
			case "enumeration":
				d.enumerations = append(d.enumerations, attr(el, "value"))
			}
		case xml.EndElement:
			depth--
		}
	}
}

// attr returns the value of the unqualified attribute local of el.
func attr(el xml.StartElement, local string) string {
	for _, a := range el.Attr {
		if a.Name.Space == "" && a.Name.Local == local {
			return a.Value
		}
	}
	return ""
}
