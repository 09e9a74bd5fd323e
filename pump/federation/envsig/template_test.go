package envsig

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/xml"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/russellhaering/goxmldsig/types"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// referenceSign signs as the specification reads, without the template:
// marshal SignedInfo, canonicalise it, sign it, insert the marshalled
// Signature into meta and canonicalise the whole.
func referenceSign(t *testing.T, key ed25519.PrivateKey, env []byte) []byte {
	t.Helper()
	parts, err := split(env)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(parts.Unsigned)
	si := newSignedInfo(base64.StdEncoding.EncodeToString(sum[:]))
	siXML, err := xml.Marshal(si)
	if err != nil {
		t.Fatal(err)
	}
	siC14N, err := stage.Canonicalize(siXML)
	if err != nil {
		t.Fatal(err)
	}
	sigXML, err := xml.Marshal(signature{SignedInfo: si,
		SignatureValue: types.SignatureValue{Data: base64.StdEncoding.EncodeToString(ed25519.Sign(key, siC14N))}})
	if err != nil {
		t.Fatal(err)
	}
	at, err := containerEnd(parts.Unsigned)
	if err != nil {
		t.Fatal(err)
	}
	doc := append(append(append([]byte(nil), parts.Unsigned[:at]...), sigXML...), parts.Unsigned[at:]...)
	out, err := stage.Canonicalize(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSignEqualsTheReference: the template writes byte for byte what
// canonicalising the marshalled Signature in place gives, for envelopes
// whose meta holds what could mislead a scan for its end.
func TestSignEqualsTheReference(t *testing.T) {
	k := key(4)
	for name, env := range map[string]string{
		"plain":                          envelope,
		"prefixed":                       prefixed,
		"processing instruction in meta": strings.Replace(envelope, "<thread>", `<?pi </meta> "x?><thread>`, 1),
		"meta nested in meta": strings.Replace(envelope, "<thread>",
			`<x:meta xmlns:x="urn:x" a="&gt; &quot;"><meta></meta></x:meta><thread>`, 1),
		"attribute with > and /": strings.Replace(envelope, "<to>", `<to a="/>" b="x/">`, 1),
		"empty meta":             `<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta/><P/></message>`,
		"text with markup chars": strings.Replace(envelope, "Hello Dan!", "a &lt;/meta&gt; b", 1),
	} {
		t.Run(name, func(t *testing.T) {
			got, err := Sign(k, []byte(env))
			if err != nil {
				t.Fatal(err)
			}
			if want := referenceSign(t, k, []byte(env)); !bytes.Equal(got, want) {
				t.Fatalf("Sign:\n%s\nreference:\n%s", got, want)
			}
			canon, err := stage.Canonicalize(got)
			if err != nil || !bytes.Equal(canon, got) {
				t.Fatalf("Sign's output is not canonical (%v):\n%s\n%s", err, got, canon)
			}
			if err := Verify(k.Public().(ed25519.PublicKey), got); err != nil {
				t.Fatal(err)
			}
			// Verify recognises it without canonicalising the Signature.
			parts, err := splitUnsigned(got)
			if err != nil || parts.Signature != nil {
				t.Fatalf("splitUnsigned: %v, Signature %q", err, parts.Signature)
			}
			tm, err := canonicalTemplate()
			if err != nil {
				t.Fatal(err)
			}
			if _, _, ok := tm.inPlace(got, parts.Unsigned); !ok {
				t.Fatalf("the template is not recognised in place:\n%s", got)
			}
		})
	}
}

// TestMetaEndAgreesWithTheDecoder: the markup scan finds meta's end tag
// where encoding/xml does, or declines.
func TestMetaEndAgreesWithTheDecoder(t *testing.T) {
	for _, doc := range []string{
		`<m><meta></meta></m>`,
		`<m><meta><a x="1>2" y="/"></a><?p </meta>?></meta><p></p></m>`,
		`<e:m xmlns:e="u"><e:meta><e:meta></e:meta></e:meta></e:m>`,
		`<m><meta>a &lt;/meta&gt;</meta></m>`,
	} {
		want, err := containerEnd([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := metaEnd([]byte(doc)); !ok || got != want {
			t.Errorf("metaEnd(%s) = %d, %v; want %d", doc, got, ok, want)
		}
	}
	for _, doc := range []string{`<m><meta/></m>`, `<m><meta><!-- c --></meta></m>`, `<m><meta>`, `<m>`} {
		if at, ok := metaEnd([]byte(doc)); ok {
			t.Errorf("metaEnd(%s) = %d, want a refusal", doc, at)
		}
	}
}

// TestVerifyTemplatePath: a Signature of the template's shape whose values
// are wrong is refused as the strict path refuses it.
func TestVerifyTemplatePath(t *testing.T) {
	k := key(5)
	pub := k.Public().(ed25519.PublicKey)
	signed := mustSign(t, k, envelope)
	values := regexp.MustCompile(`<DigestValue>([^<]{44})</DigestValue>.*<SignatureValue>([^<]{88})</SignatureValue>`).
		FindStringSubmatch(signed)
	if values == nil {
		t.Fatalf("no values of the template's lengths in %s", signed)
	}
	flip := func(s string, i int, c byte) string {
		b := []byte(s)
		if b[i] == c {
			c = 'B'
		}
		b[i] = c
		return string(b)
	}
	digest, value := values[1], values[2]
	for _, tc := range []struct {
		name string
		doc  string
		want error
	}{
		{"valid", signed, nil},
		{"digest changed", strings.Replace(signed, digest, flip(digest, 3, 'A'), 1), ErrDigest},
		{"value changed", strings.Replace(signed, value, flip(value, 10, 'A'), 1), ErrSignature},
		{"value not base64", strings.Replace(signed, value, flip(value, 10, '!'), 1), ErrMalformed},
		{"digest not base64", strings.Replace(signed, digest, flip(digest, 3, '*'), 1), ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := Verify(pub, []byte(tc.doc)); !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
}
