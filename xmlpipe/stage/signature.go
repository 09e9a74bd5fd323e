package stage

import (
	"encoding/xml"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/internal/lx"
)

// SignatureParts is what checking an enveloped signature needs from one
// strict parse of a signed document (SplitSignature). Every byte slice is
// exclusive C14N 1.0 without comments.
type SignatureParts struct {
	// Root and Container name the document element and its first child
	// element (the envelope's <meta>; zero when the root has no child element).
	Root, Container xml.Name
	// Count is how many {ns}name elements the whole document holds, wherever
	// they are.
	Count int
	// Found reports whether the container has a {ns}name child element: the
	// first one is the signature element the other fields describe.
	Found bool
	// Last reports whether no element follows the signature element inside
	// the container.
	Last bool
	// Unsigned is the document without the signature element (its subtree,
	// attributes and namespace declarations), i.e. the enveloped-signature
	// transform followed by exclusive C14N; the whole document when Found is
	// false.
	Unsigned []byte
	// Signature is the signature element alone (nil when Found is false), for
	// encoding/xml.Unmarshal.
	Signature []byte
	// SignedInfo is the signature element's first {ns}SignedInfo child as it
	// stands in the document (nil when there is none): the bytes a signature
	// value is computed over.
	SignedInfo []byte
}

// SplitSignature parses b strictly, as Canonicalize does (no repair, DOCTYPE
// rejected), and splits off the enveloped signature: the first child element
// {ns}name of the root's first child element. All canonical forms come from
// the same parse, so what is hashed is what was parsed. A document without
// such an element is not an error: Found is false and Unsigned is the whole
// document's canonical form, which is what a signer hashes.
func SplitSignature(b []byte, ns, name string) (*SignatureParts, error) {
	return splitSignature(b, ns, name, true)
}

// SplitSignatureUnsigned is SplitSignature without the canonical forms of the
// signature element and of its SignedInfo (Signature and SignedInfo stay nil):
// for a verifier that recognises the signature element in the document's own
// bytes once it has the canonical form of the rest, and so needs one C14N
// pass instead of three.
func SplitSignatureUnsigned(b []byte, ns, name string) (*SignatureParts, error) {
	return splitSignature(b, ns, name, false)
}

// splitSignature is SplitSignature; subtrees says whether to canonicalise
// the signature element and its SignedInfo.
func splitSignature(b []byte, ns, name string, subtrees bool) (*SignatureParts, error) {
	doc, err := parseStrict(b)
	if err != nil {
		return nil, err
	}
	defer doc.Free()
	root := doc.Root()
	parts := &SignatureParts{Root: xml.Name{Space: root.Namespace(), Local: root.Name()}}
	parts.Count = countElements(root, ns, name)
	container := root.FirstElement()
	var sig lx.Node
	if !container.IsZero() {
		parts.Container = xml.Name{Space: container.Namespace(), Local: container.Name()}
		for n := container.FirstElement(); !n.IsZero(); n = n.NextElement() {
			if n.NameIs(name) && n.NamespaceIs(ns) {
				sig = n
				break
			}
		}
	}
	parts.Unsigned, err = doc.C14NWithout(sig, lx.C14NExc10, false, nil)
	if err != nil {
		return nil, c14nFailure(err)
	}
	if sig.IsZero() {
		return parts, nil
	}
	parts.Found = true
	parts.Last = sig.NextElement().IsZero()
	if !subtrees {
		return parts, nil
	}
	if parts.Signature, err = doc.C14N(sig, lx.C14NExc10, false, nil); err != nil {
		return nil, c14nFailure(err)
	}
	for n := sig.FirstElement(); !n.IsZero(); n = n.NextElement() {
		if n.NameIs("SignedInfo") && n.NamespaceIs(ns) {
			if parts.SignedInfo, err = doc.C14N(n, lx.C14NExc10, false, nil); err != nil {
				return nil, c14nFailure(err)
			}
			break
		}
	}
	return parts, nil
}

// countElements counts the {ns}name elements in the subtree at n, n included.
func countElements(n lx.Node, ns, name string) int {
	count := 0
	if n.NameIs(name) && n.NamespaceIs(ns) {
		count++
	}
	for c := n.FirstElement(); !c.IsZero(); c = c.NextElement() {
		count += countElements(c, ns, name)
	}
	return count
}

// c14nFailure wraps a libxml2 C14N error as a failure.StageC14N failure.
func c14nFailure(err error) error {
	return fail(failure.StageC14N, failure.ErrMalformed, failure.Diagnostic{Stage: failure.StageC14N, Msg: err.Error()})
}
