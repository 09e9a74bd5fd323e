package envsig

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// FuzzVerify feeds arbitrary bytes to Verify (a peer's envelope is untrusted):
// it must never panic, must fail with one of the sentinels, and must accept
// nothing but the content the test key signed (up to C14N); the parse-free
// paths must agree with the parsed ones. The seeds are a signed envelope, a
// prefixed one, and broken variants of it.
func FuzzVerify(f *testing.F) {
	k := key(1)
	pub := k.Public().(ed25519.PublicKey)
	signed := mustSign(f, k, envelope)
	prefixedUnsigned, err := stage.Canonicalize([]byte(prefixed))
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		signed,
		mustSign(f, k, prefixed),
		mustSign(f, key(2), envelope),
		envelope,
		strings.Replace(signed, "Hello Dan!", "Hello Eve!", 1),
		strings.Replace(signed, AlgorithmEd25519, "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256", 1),
		strings.Replace(signed, `URI=""`, `URI="#x"`, 1),
		strings.Replace(signed, "</SignatureValue>", "</SignatureValue><KeyInfo/>", 1),
		signed[:len(signed)/2],
		"<!DOCTYPE message>" + signed,
		"",
	} {
		f.Add([]byte(seed))
	}
	parts, err := stage.SplitSignature([]byte(signed), Namespace, "Signature")
	if err != nil {
		f.Fatal(err)
	}
	sentinels := []error{ErrUnsigned, ErrAlgorithm, ErrDigest, ErrSignature, ErrMalformed}
	f.Fuzz(func(t *testing.T, doc []byte) {
		// What Sign and Verify take as canonical without a parse is
		// libxml2's C14N of itself.
		if canonicalUnsigned(doc) {
			if canon, err := stage.Canonicalize(doc); err != nil || !bytes.Equal(canon, doc) {
				t.Fatalf("canonicalUnsigned, but C14N is %q (%v)", canon, err)
			}
		}
		if verifyCanonical(pub, doc) {
			if err := verifyParsed(pub, doc); err != nil {
				t.Fatalf("verifyCanonical accepts what verifyParsed refuses: %v", err)
			}
		}
		err := Verify(pub, doc)
		if err == nil {
			got, err := stage.SplitSignature(doc, Namespace, "Signature")
			if err != nil {
				t.Fatalf("verified, but SplitSignature fails: %v", err)
			}
			if !bytes.Equal(got.Unsigned, parts.Unsigned) && !bytes.Equal(got.Unsigned, prefixedUnsigned) {
				t.Fatalf("verified content the key did not sign:\n%s", got.Unsigned)
			}
			return
		}
		for _, s := range sentinels {
			if errors.Is(err, s) {
				return
			}
		}
		t.Fatalf("error wraps no sentinel: %v", err)
	})
}

// FuzzCanonicalUnsigned: what Sign signs and Verify verifies without a
// parse (canonicalUnsigned) is exactly libxml2's exclusive C14N of itself,
// for any bytes.
func FuzzCanonicalUnsigned(f *testing.F) {
	for _, seed := range []string{envelope, prefixed, strings.Replace(envelope, "Dan", "Dän €", 1),
		strings.Replace(envelope, "<from>", `<from a="1">`, 1), strings.Replace(envelope, `xmlns=""`, `xmlns="urn:x"`, 1)} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		if !canonicalUnsigned(doc) {
			return
		}
		if canon, err := stage.Canonicalize(doc); err != nil || !bytes.Equal(canon, doc) {
			t.Fatalf("canonicalUnsigned, but C14N is %q (%v)", canon, err)
		}
	})
}
