package envsig

import (
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"strings"

	"github.com/russellhaering/goxmldsig/types"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// Verify checks signed, an envelope signed by Sign, against the peer's
// public key. It is strict: exactly one <Signature> in the whole envelope,
// the last child element of <meta>, of exactly this package's shape
// (profile.xsd) and algorithms, with one Reference URI="". The digest is
// recomputed over libxml2's exclusive C14N of the envelope without the
// Signature (ErrDigest on mismatch, checked first as XML-DSig's core
// validation orders it), then the signature value is verified over the
// exclusive C14N of SignedInfo as it stands in the envelope (ErrSignature).
// A nil error means the envelope is byte for byte, up to C14N, what the key's
// holder signed. An envelope in the canonical form Sign returns is verified
// over its bytes without a parse (canonical.go).
func Verify(pub ed25519.PublicKey, signed []byte) error {
	if len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf("%w: public key is %d bytes, want %d", ErrKey, len(pub), ed25519.PublicKeySize)
	}
	if verifyCanonical(pub, signed) {
		return nil
	}
	return verifyParsed(pub, signed)
}

// verifyParsed is Verify over the envelope as libxml2 parses it.
func verifyParsed(pub ed25519.PublicKey, signed []byte) error {
	parts, err := splitUnsigned(signed)
	if err != nil {
		return err
	}
	if err := checkPlacement(parts); err != nil {
		return err
	}
	if t, err := canonicalTemplate(); err == nil {
		if digest, value, ok := t.inPlace(signed, parts.Unsigned); ok {
			si := t.signedInfo(make([]byte, 0, len(t.siHead)+digestLen+len(t.siTail)), string(digest))
			return verifyValues(pub, parts.Unsigned, si, digest, value)
		}
	}
	// Not the canonical template in a canonical envelope: canonicalise the
	// Signature and check it strictly.
	if parts, err = split(signed); err != nil {
		return err
	}
	return verifyStrict(pub, parts)
}

// checkPlacement refuses an envelope without exactly one Signature, the
// last child element of meta.
func checkPlacement(parts *stage.SignatureParts) error {
	switch {
	case parts.Count == 0:
		return ErrUnsigned
	case !parts.Found:
		return fmt.Errorf("%w: the Signature is not a child of meta", ErrMalformed)
	case parts.Count > 1:
		return fmt.Errorf("%w: %d Signature elements, want exactly one", ErrMalformed, parts.Count)
	case !parts.Last:
		return fmt.Errorf("%w: the Signature is not the last child element of meta", ErrMalformed)
	}
	return nil
}

// verifyStrict checks a Signature of any shape against this package's
// profile, then its digest and value.
func verifyStrict(pub ed25519.PublicKey, parts *stage.SignatureParts) error {
	var sig types.Signature
	if err := xml.Unmarshal(parts.Signature, &sig); err != nil {
		return fmt.Errorf("%w: Signature: %w", ErrMalformed, err)
	}
	if sig.SignedInfo == nil || sig.SignatureValue == nil {
		return fmt.Errorf("%w: Signature lacks SignedInfo or SignatureValue", ErrMalformed)
	}
	ref, err := checkSignedInfo(sig.SignedInfo)
	if err != nil {
		return err
	}
	schema, err := profile()
	if err != nil {
		return fmt.Errorf("envsig: compile profile.xsd: %w", err)
	}
	if err := schema.Validate(parts.Signature); err != nil {
		return fmt.Errorf("%w: Signature has an unexpected shape: %w", ErrMalformed, err)
	}
	want, err := decodeBase64(ref.DigestValue)
	if err != nil {
		return fmt.Errorf("%w: DigestValue: %w", ErrMalformed, err)
	}
	got := sha256.Sum256(parts.Unsigned)
	if subtle.ConstantTimeCompare(got[:], want) != 1 {
		return fmt.Errorf("%w: the envelope without its Signature hashes to %s, SignedInfo says %s",
			ErrDigest, base64.StdEncoding.EncodeToString(got[:]), strings.TrimSpace(ref.DigestValue))
	}
	value, err := decodeBase64(sig.SignatureValue.Data)
	if err != nil {
		return fmt.Errorf("%w: SignatureValue: %w", ErrMalformed, err)
	}
	if len(parts.SignedInfo) == 0 || !ed25519.Verify(pub, parts.SignedInfo, value) {
		return fmt.Errorf("%w: Ed25519 over SignedInfo with the peer's key", ErrSignature)
	}
	return nil
}

// verifyValues is the end of Verify for a Signature of the canonical
// template (template.go): its digest and value, as base64, checked as the
// strict path checks them.
func verifyValues(pub ed25519.PublicKey, unsigned, signedInfo, digest, value []byte) error {
	want, err := strictBase64(digest)
	if err != nil {
		return fmt.Errorf("%w: DigestValue: %w", ErrMalformed, err)
	}
	got := sha256.Sum256(unsigned)
	if subtle.ConstantTimeCompare(got[:], want) != 1 {
		return fmt.Errorf("%w: the envelope without its Signature hashes to %s, SignedInfo says %s",
			ErrDigest, base64.StdEncoding.EncodeToString(got[:]), digest)
	}
	v, err := strictBase64(value)
	if err != nil {
		return fmt.Errorf("%w: SignatureValue: %w", ErrMalformed, err)
	}
	if !ed25519.Verify(pub, signedInfo, v) {
		return fmt.Errorf("%w: Ed25519 over SignedInfo with the peer's key", ErrSignature)
	}
	return nil
}

// checkSignedInfo refuses any algorithm but this package's, by name, and
// any Reference but the single URI="" one, which it returns.
func checkSignedInfo(si *types.SignedInfo) (*types.Reference, error) {
	if a := si.CanonicalizationMethod.Algorithm; a != AlgorithmExcC14N {
		return nil, fmt.Errorf("%w: CanonicalizationMethod %q, want %q", ErrAlgorithm, a, AlgorithmExcC14N)
	}
	if a := si.SignatureMethod.Algorithm; a != AlgorithmEd25519 {
		return nil, fmt.Errorf("%w: SignatureMethod %q, want %q", ErrAlgorithm, a, AlgorithmEd25519)
	}
	if n := len(si.References); n != 1 {
		return nil, fmt.Errorf("%w: %d References, want exactly one", ErrMalformed, n)
	}
	ref := &si.References[0]
	if ref.URI != "" {
		return nil, fmt.Errorf("%w: Reference URI %q, only URI=\"\" (the whole envelope) is accepted", ErrMalformed, ref.URI)
	}
	if a := ref.DigestAlgo.Algorithm; a != AlgorithmSHA256 {
		return nil, fmt.Errorf("%w: DigestMethod %q, want %q", ErrAlgorithm, a, AlgorithmSHA256)
	}
	want := []string{AlgorithmEnveloped, AlgorithmExcC14N}
	ts := ref.Transforms.Transforms
	if len(ts) != len(want) {
		return nil, fmt.Errorf("%w: %d Transforms, want %q", ErrAlgorithm, len(ts), want)
	}
	for i, t := range ts {
		if t.Algorithm != want[i] {
			return nil, fmt.Errorf("%w: Transform %d is %q, want %q", ErrAlgorithm, i+1, t.Algorithm, want[i])
		}
		if t.InclusiveNamespaces != nil {
			return nil, fmt.Errorf("%w: Transform %d has an InclusiveNamespaces PrefixList %q", ErrAlgorithm, i+1, t.InclusiveNamespaces.PrefixList)
		}
	}
	return ref, nil
}

// decodeBase64 decodes base64 text, ignoring the XML whitespace line
// wrapping that XML-DSig allows.
func decodeBase64(s string) ([]byte, error) {
	s = strings.Map(func(r rune) rune {
		switch r {
		case ' ', '\t', '\n', '\r':
			return -1
		}
		return r
	}, s)
	return base64.StdEncoding.Strict().DecodeString(s)
}
