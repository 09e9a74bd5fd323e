// Package envsig signs and verifies federation envelopes with Ed25519
// XML-DSig enveloped signatures (RFC 9231's eddsa-ed25519).
//
// The signature is a <Signature xmlns="http://www.w3.org/2000/09/xmldsig#">
// placed as the last child of the envelope's <meta>. Its one Reference has
// URI="" (the whole envelope), the transforms enveloped-signature then
// exclusive C14N 1.0, and a SHA-256 digest; SignedInfo is canonicalised with
// exclusive C14N 1.0 and signed with Ed25519. There is no KeyInfo: each
// federation link knows its peer's key.
//
// Every canonical form comes from libxml2 (stage.SplitSignature), never
// from goxmldsig, whose canonicaliser differs from the specification on
// namespaced attributes, attribute whitespace and InclusiveNamespaces; only
// goxmldsig's types describe the signature's structure.
//
// Whitespace is content: exclusive C14N keeps whitespace text nodes, so an
// envelope re-indented after signing (a pretty-printer, a proxy that
// reformats) no longer verifies (ErrDigest). Signed envelopes travel as the
// canonical bytes Sign returns. Re-serialisations that C14N erases (attribute
// order, quoting, <a/> for <a></a>, whitespace inside tags, redundant
// namespace declarations) do verify; prefix choice is not erased (exclusive
// C14N keeps prefixes), so an envelope signed with <e:message xmlns:e=…>
// verifies as such, and fails (ErrDigest) once rewritten to the default
// namespace.
package envsig
