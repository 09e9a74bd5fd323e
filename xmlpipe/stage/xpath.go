package stage

import (
	"errors"
	"fmt"
	"strings"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/internal/lx"
)

// XPath errors.
var (
	// ErrXPath means the expression does not compile or evaluate (XPath 1.0).
	ErrXPath = errors.New("xpath")
	// ErrDocument means the document is not well-formed XML (or declares a DOCTYPE).
	ErrDocument = errors.New("not a well-formed XML document")
)

// XPathResult is the value of an XPath 1.0 expression: a node-set, a
// boolean, a number or a string (Type says which).
type XPathResult struct {
	// Type is "nodeset", "boolean", "number" or "string".
	Type    string
	Nodes   []XPathMatch
	Boolean bool
	Number  float64
	String  string
}

// XPathMatch is one node of a node-set.
type XPathMatch struct {
	// Kind is element, attribute, text, comment, pi, namespace or document.
	Kind string
	// Name is the local name (element, attribute, PI) or a namespace node's
	// prefix; Namespace the namespace URI.
	Name, Namespace string
	// Value is the node's string-value.
	Value string
	// XML is the exclusive C14N of an element node.
	XML []byte
}

var nodeKinds = map[lx.NodeType]string{
	lx.ElementNode: "element", lx.AttributeNode: "attribute", lx.TextNode: "text", lx.CDATANode: "text",
	lx.CommentNode: "comment", lx.PINode: "pi", lx.NamespaceNode: "namespace", lx.DocumentNode: "document",
}

// EvalXPath parses doc (strictly: no network, no DOCTYPE, no entity
// expansion) and evaluates expr on it with libxml2's XPath 1.0, ns binding
// prefixes to namespace URIs. The evaluation is bounded (lx.XPathOpLimit).
func EvalXPath(doc []byte, expr string, ns map[string]string) (*XPathResult, error) {
	if hasDoctype(doc) {
		return nil, fmt.Errorf("%w: document type declarations are rejected", ErrDocument)
	}
	d, errs := lx.Parse(doc, lx.OptNoNet)
	if d == nil || (errs != nil && errs.Severe()) {
		if d != nil {
			d.Free()
		}
		msg := "empty or unreadable"
		if errs != nil && len(errs.List) > 0 {
			msg = strings.TrimSpace(errs.List[0].Msg)
		}
		return nil, fmt.Errorf("%w: %s", ErrDocument, msg)
	}
	defer d.Free()
	if d.HasDTD() {
		return nil, fmt.Errorf("%w: document type declarations are rejected", ErrDocument)
	}
	v, err := d.XPath(expr, ns)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrXPath, strings.TrimPrefix(err.Error(), "xpath: "))
	}
	r := &XPathResult{Boolean: v.Boolean, Number: v.Number, String: v.String}
	switch v.Type {
	case lx.XPathNodeSet:
		r.Type = "nodeset"
	case lx.XPathBoolean:
		r.Type = "boolean"
	case lx.XPathNumber:
		r.Type = "number"
	default:
		r.Type = "string"
	}
	for _, n := range v.Nodes {
		m := XPathMatch{Kind: nodeKinds[n.Type], Name: n.Name, Namespace: n.Namespace, Value: n.Value}
		if m.Kind == "" {
			m.Kind = "other"
		}
		if n.Type == lx.ElementNode {
			b, err := d.C14N(n.Node, lx.C14NExc10, false, nil)
			if err != nil {
				return nil, fmt.Errorf("%w: canonicalising a match: %v", ErrXPath, err)
			}
			m.XML = b
		}
		r.Nodes = append(r.Nodes, m)
	}
	return r, nil
}
