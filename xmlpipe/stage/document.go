package stage

import (
	"errors"
	"fmt"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/internal/lx"
)

// Document errors.
var (
	// ErrNoSuchElement: the document has no element where one was asked for.
	ErrNoSuchElement = errors.New("no such element")
	// ErrSchema: a document does not match the schema it was validated
	// against (Schema.Validate).
	ErrSchema = errors.New("document does not match the schema")
)

// CanonicalizeChild returns the exclusive C14N 1.0 (without comments) of the
// first child element of the document's root whose namespace is ns and whose
// local name is name. Exclusive C14N renders the namespaces the subtree uses
// and nothing of its context, so the bytes do not depend on the root's other
// declarations: what a signer canonicalises alone is what a verifier
// canonicalises in place. The document is parsed strictly, as by
// Canonicalize.
func CanonicalizeChild(b []byte, ns, name string) ([]byte, error) {
	doc, err := parseStrict(b)
	if err != nil {
		return nil, err
	}
	defer doc.Free()
	for n := doc.Root().FirstElement(); !n.IsZero(); n = n.NextElement() {
		if n.Name() == name && n.Namespace() == ns {
			out, err := doc.C14N(n, lx.C14NExc10, false, nil)
			if err != nil {
				return nil, fail(failure.StageC14N, failure.ErrMalformed, failure.Diagnostic{Stage: failure.StageC14N, Msg: err.Error()})
			}
			return out, nil
		}
	}
	return nil, fmt.Errorf("xmlpipe: {%s}%s under the root: %w", ns, name, ErrNoSuchElement)
}

// Schema is a compiled XSD that validates whole documents. It is safe for
// concurrent use.
type Schema struct {
	s *lx.Schema
}

// CompileSchema compiles xsd; url names it in diagnostics (mem:/… for an
// embedded schema).
func CompileSchema(xsd []byte, url string) (*Schema, error) {
	s, errs := lx.CompileSchema(xsd, url)
	if s == nil {
		return nil, fmt.Errorf("xmlpipe: schema %s: %w", url, errs)
	}
	return &Schema{s: s}, nil
}

// Validate parses b strictly and validates it; the error is a
// *failure.Failure at failure.StageParse (failure.ErrMalformed,
// failure.ErrDoctype) or failure.StageEnvelope (ErrSchema) whose diagnostics
// are libxml2's findings.
func (s *Schema) Validate(b []byte) error {
	doc, err := parseStrict(b)
	if err != nil {
		return err
	}
	defer doc.Free()
	if errs := s.s.Validate(doc); errs != nil {
		return fail(failure.StageEnvelope, ErrSchema, diagsOf(failure.StageEnvelope, errs)...)
	}
	return nil
}

// parseStrict parses a complete document without repair, refusing a DOCTYPE.
func parseStrict(b []byte) (*lx.Doc, error) {
	if len(b) == 0 {
		return nil, fail(failure.StageParse, failure.ErrEmpty)
	}
	if hasDoctype(b) {
		return nil, fail(failure.StageParse, failure.ErrDoctype, failure.Diagnostic{Stage: failure.StageParse, Msg: "document type declarations are rejected"})
	}
	doc, errs := lx.Parse(b, lx.OptNoNet)
	if doc == nil || errs.Severe() {
		doc.Free()
		return nil, fail(failure.StageParse, failure.ErrMalformed, diagsOf(failure.StageParse, errs)...)
	}
	if doc.HasDTD() {
		doc.Free()
		return nil, fail(failure.StageParse, failure.ErrDoctype)
	}
	return doc, nil
}
