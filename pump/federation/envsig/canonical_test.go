package envsig

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestCanonicalPathsAgree holds the parse-free paths (canonical.go) to the
// parsed ones: Sign of a canonical envelope writes the same bytes as Sign of
// a re-serialisation of it, which takes the parse; verifyCanonical accepts
// only what verifyParsed accepts; and Verify answers as verifyParsed does.
func TestCanonicalPathsAgree(t *testing.T) {
	k := key(1)
	pub := k.Public().(ed25519.PublicKey)

	// A re-serialisation C14N erases (quotes, empty-element tag, spaces in a
	// tag) is not canonical, so Sign parses it; the bytes must not differ.
	reserialised := strings.Replace(envelope, `<Note kind="plain" lang="en">`, `<Note lang='en'  kind="plain" >`, 1)
	if canonicalUnsigned([]byte(reserialised)) || !canonicalUnsigned([]byte(envelope)) {
		t.Fatal("canonicalUnsigned misjudges the test envelopes")
	}
	signed := mustSign(t, k, envelope)
	if got := mustSign(t, k, reserialised); got != signed {
		t.Fatalf("Sign of a canonical envelope differs from Sign of its re-serialisation:\n%s\n%s", signed, got)
	}
	// A payload that mentions the XML-DSig namespace takes the parse.
	mentions := strings.Replace(envelope, "Hello Dan!", "see "+Namespace, 1)
	if canonicalUnsigned([]byte(mentions)) {
		t.Fatal("canonicalUnsigned takes an envelope naming the XML-DSig namespace")
	}
	signedMentions := mustSign(t, k, mentions)

	sigAt := strings.Index(signed, "<Signature")
	sigEnd := strings.Index(signed, "</Signature>") + len("</Signature>")
	sig := signed[sigAt:sigEnd]
	tests := []struct {
		name      string
		in        string
		canonical bool  // verifyCanonical accepts it
		want      error // Verify's sentinel (nil: verifies)
	}{
		{"canonical", signed, true, nil},
		{"prefixed envelope", mustSign(t, k, prefixed), false, nil},
		{"payload names the dsig namespace", signedMentions, false, nil},
		{"re-serialised after signing", strings.Replace(signed, `<Note kind="plain" lang="en">`, `<Note lang="en" kind="plain">`, 1), false, nil},
		{"tampered payload", strings.Replace(signed, "Hello Dan!", "Hello Eve!", 1), false, ErrDigest},
		{"other key", mustSign(t, key(2), envelope), false, ErrSignature},
		{"signature not last", strings.Replace(strings.Replace(signed, sig, "", 1), "<from>", sig+"<from>", 1), false, ErrMalformed},
		{"two signatures", strings.Replace(signed, "</meta>", sig+"</meta>", 1), false, ErrMalformed},
		{"signature outside meta", strings.Replace(strings.Replace(signed, sig, "", 1), "</message>", sig+"</message>", 1), false, ErrMalformed},
		{"text before meta", strings.Replace(signed, "><meta>", ">x<meta>", 1), false, ErrDigest},
		{"truncated", signed[:len(signed)-3], false, ErrMalformed},
		{"unsigned", envelope, false, ErrUnsigned},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := []byte(tc.in)
			if got := verifyCanonical(pub, b); got != tc.canonical {
				t.Errorf("verifyCanonical = %v, want %v", got, tc.canonical)
			}
			parsed := verifyParsed(pub, b)
			if tc.canonical && parsed != nil {
				t.Errorf("verifyCanonical accepts what verifyParsed refuses: %v", parsed)
			}
			err := Verify(pub, b)
			if (err == nil) != (parsed == nil) || (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Errorf("Verify = %v, verifyParsed = %v, want %v", err, parsed, tc.want)
			}
		})
	}
}

// TestCanonicalUnsignedIsItsOwnC14N: what Sign signs without a parse is
// byte for byte libxml2's C14N of it.
func TestCanonicalUnsignedIsItsOwnC14N(t *testing.T) {
	for _, in := range []string{envelope, strings.Replace(envelope, "Dan", "Dän €", 1)} {
		if !canonicalUnsigned([]byte(in)) {
			t.Fatalf("not taken as canonical: %s", in)
		}
		canon, err := stage.Canonicalize([]byte(in))
		if err != nil || !bytes.Equal(canon, []byte(in)) {
			t.Fatalf("C14N differs (%v):\n%s\n%s", err, in, canon)
		}
	}
}
