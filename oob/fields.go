package oob

import (
	"encoding/xml"
	"slices"
	"strings"
	"sync"

	"github.com/xml-pipeline/xmlpipe/schemas"
)

// xsdDoc is the part of privileged-msg.xsd that names each request
// operation's children.
type xsdDoc struct {
	Types []struct {
		Name   string `xml:"name,attr"`
		Choice []struct {
			Name string `xml:"name,attr"`
			Type string `xml:"type,attr"`
		} `xml:"choice>element"`
		Sequence []struct {
			Name string `xml:"name,attr"`
		} `xml:"sequence>element"`
	} `xml:"complexType"`
}

var (
	fieldsOnce sync.Once
	fields     map[string][]string
	opNames    []string
)

// loadFields reads the request operations and their children from
// privileged-msg.xsd.
func loadFields() {
	fields = map[string][]string{}
	var d xsdDoc
	if err := xml.Unmarshal(schemas.Privileged(), &d); err != nil {
		return
	}
	seq := map[string][]string{}
	for _, t := range d.Types {
		seq[t.Name] = []string{} // an empty sequence is still a type
		for _, e := range t.Sequence {
			seq[t.Name] = append(seq[t.Name], e.Name)
		}
	}
	for _, t := range d.Types {
		if t.Name != "RequestPayload" {
			continue
		}
		for _, e := range t.Choice {
			fields[e.Name] = seq[strings.TrimPrefix(e.Type, "pm:")]
			opNames = append(opNames, e.Name)
		}
	}
}

// OperationFields returns the child element names of the request operation
// op, in the order privileged-msg.xsd requires; ok is false when op is not
// one of its operations.
func OperationFields(op string) (names []string, ok bool) {
	fieldsOnce.Do(loadFields)
	names, ok = fields[op]
	return names, ok
}

// OperationNames returns the request operations of privileged-msg.xsd, in the
// order the schema declares them.
func OperationNames() []string {
	fieldsOnce.Do(loadFields)
	return slices.Clone(opNames)
}
