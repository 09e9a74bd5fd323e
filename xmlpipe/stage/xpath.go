package stage

import (
	"context"
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
	// ErrResultTooLarge means the result passes the bound EvalXPath was
	// given; it comes wrapped in ErrXPath.
	ErrResultTooLarge = errors.New("result too large")
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
// prefixes to namespace URIs. The evaluation is bounded (lx.XPathOpLimit)
// and stops when ctx ends (an ErrXPath wrapping ctx's error). maxResult
// bounds the result's bytes (a string's, or the sum of a node-set's names,
// string-values and canonical XML; <= 0: lx.XPathMaxResult): the
// evaluation stops past it with an ErrXPath wrapping ErrResultTooLarge,
// before it copies the rest.
func EvalXPath(ctx context.Context, doc []byte, expr string, ns map[string]string, maxResult int) (*XPathResult,
	error) {
	if maxResult <= 0 {
		maxResult = lx.XPathMaxResult
	}
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
	v, err := d.XPath(ctx, expr, ns, maxResult)
	switch {
	case errors.Is(err, lx.ErrXPathTooLarge):
		return nil, fmt.Errorf("%w: %w%s", ErrXPath, ErrResultTooLarge,
			strings.TrimPrefix(err.Error(), lx.ErrXPathTooLarge.Error()))
	case errors.Is(err, lx.ErrXPathStopped):
		return nil, fmt.Errorf("%w: evaluation stopped: %w", ErrXPath, context.Cause(ctx))
	case err != nil:
		return nil, fmt.Errorf("%w: %s", ErrXPath, strings.TrimPrefix(err.Error(), "xpath: "))
	}
	size := 0
	for _, n := range v.Nodes {
		size += len(n.Name) + len(n.Namespace) + len(n.Value)
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
			if size += len(b); size > maxResult {
				return nil, fmt.Errorf("%w: %w: the %d nodes with the canonical XML of the first %d pass %d bytes",
					ErrXPath, ErrResultTooLarge, len(v.Nodes), len(r.Nodes)+1, maxResult)
			}
			m.XML = b
		}
		r.Nodes = append(r.Nodes, m)
	}
	return r, nil
}
