package envsig

import (
	"bytes"
	"crypto/ed25519"
	"unicode/utf8"

	"github.com/xml-pipeline/xmlpipe/schemas"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// Envelopes travel as the canonical bytes Sign returns, and what Sign signs
// (an envelope the pump built) is canonical already. For those, the
// exclusive C14N of the envelope without its Signature is its own bytes
// with the Signature's bytes cut out, and no parse is needed: Sign and
// Verify take the bytes as they are when they can prove that, and parse
// with libxml2 (stage.SplitSignature) otherwise. The proof is
// stage.IsExcC14N over the unsigned bytes, in the shape the parse would
// check: the root <message> of the envelope namespace, declared and alone
// on it, whose first child is <meta>; no element of the XML-DSig namespace
// (its URI appears nowhere in them, which a canonical document cannot
// avoid for an element of that namespace); valid UTF-8.

// envelopeHead is how a canonical envelope begins: the root <message> with
// its namespace alone, then <meta>.
var envelopeHead = []byte(`<message xmlns="` + schemas.EnvelopeNS + `"><meta>`)

// canonicalUnsigned reports whether b, an envelope without a Signature, is
// proven canonical in the shape Sign and Verify accept, so that it is its
// own exclusive C14N.
func canonicalUnsigned(b []byte) bool {
	return bytes.HasPrefix(b, envelopeHead) && !bytes.Contains(b, []byte(Namespace)) &&
		utf8.Valid(b) && stage.IsExcC14N(b)
}

// verifyCanonical verifies signed without parsing it when it is a
// canonical envelope with the template's Signature (template.go) as the
// last child of its <meta>, and reports whether it did: true means the
// signature holds and the envelope is what the key's holder signed. false
// decides nothing (another shape, or a digest or value that does not
// verify over these bytes), and the caller verifies the parsed envelope,
// whose errors say what is wrong.
func verifyCanonical(pub ed25519.PublicKey, signed []byte) bool {
	t, err := canonicalTemplate()
	if err != nil {
		return false
	}
	at := bytes.Index(signed, t.sigHead)
	n := len(t.sigHead) + digestLen + len(t.sigMid) + valueLen + len(t.sigTail)
	if at < 0 || len(signed)-at < n {
		return false
	}
	sig := signed[at : at+n]
	mid := sig[len(t.sigHead)+digestLen : len(t.sigHead)+digestLen+len(t.sigMid)]
	if !bytes.Equal(mid, t.sigMid) || !bytes.HasSuffix(sig, t.sigTail) {
		return false
	}
	unsigned := make([]byte, 0, len(signed)-n)
	unsigned = append(append(unsigned, signed[:at]...), signed[at+n:]...)
	if end, ok := metaEnd(unsigned); !ok || end != at || !canonicalUnsigned(unsigned) {
		return false
	}
	digest := sig[len(t.sigHead) : len(t.sigHead)+digestLen]
	value := sig[len(sig)-len(t.sigTail)-valueLen : len(sig)-len(t.sigTail)]
	si := t.signedInfo(make([]byte, 0, len(t.siHead)+digestLen+len(t.siTail)), string(digest))
	return verifyValues(pub, unsigned, si, digest, value) == nil
}
