package envsig

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// envelope is a ~400-byte unsigned federation envelope.
const envelope = `<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta><from>greeter</from><to>shouter</to><thread>6f1c2a4e-8b3d-4c5e-9f10-1a2b3c4d5e6f</thread></meta><GreetingResponse xmlns=""><Message>Hello Dan!</Message><OriginalSender>response-handler</OriginalSender><Note kind="plain" lang="en">A federation test payload &amp; some text to reach the size of a typical message.</Note></GreetingResponse></message>`

// prefixed is envelope with the envelope namespace on a prefix.
const prefixed = `<e:message xmlns:e="https://xml-pipeline.org/ns/envelope/v1"><e:meta><e:from>greeter</e:from><e:thread>6f1c2a4e-8b3d-4c5e-9f10-1a2b3c4d5e6f</e:thread></e:meta><GreetingResponse><Message>Hello Dan!</Message></GreetingResponse></e:message>`

func key(seed byte) ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, ed25519.SeedSize))
}

func mustSign(t testing.TB, k ed25519.PrivateKey, env string) string {
	t.Helper()
	out, err := Sign(k, []byte(env))
	if err != nil {
		t.Fatalf("Sign: %v", err)
	}
	return string(out)
}

// TestSignFollowsTheSpec checks Sign's output without Verify: the digest is
// SHA-256 of the exclusive C14N of the unsigned envelope, the signature value
// is Ed25519 over SignedInfo canonicalised in place (where it carries the
// Signature's default namespace), and the Signature is the last child of meta.
func TestSignFollowsTheSpec(t *testing.T) {
	k := key(1)
	signed := mustSign(t, k, envelope)
	canon, err := stage.Canonicalize([]byte(envelope))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(canon)
	m := regexp.MustCompile(`<DigestValue>([^<]*)</DigestValue>`).FindStringSubmatch(signed)
	if m == nil || m[1] != base64.StdEncoding.EncodeToString(sum[:]) {
		t.Fatalf("DigestValue %q, want base64 sha256 of %s", m, canon)
	}
	si := regexp.MustCompile(`<SignedInfo>.*</SignedInfo>`).FindString(signed)
	si = strings.Replace(si, "<SignedInfo>", `<SignedInfo xmlns="`+Namespace+`">`, 1)
	v := regexp.MustCompile(`<SignatureValue>([^<]*)</SignatureValue>`).FindStringSubmatch(signed)
	sig, err := base64.StdEncoding.DecodeString(v[1])
	if err != nil || !ed25519.Verify(k.Public().(ed25519.PublicKey), []byte(si), sig) {
		t.Fatalf("SignatureValue does not verify over %s (%v)", si, err)
	}
	if !strings.Contains(signed, "</Signature></meta>") {
		t.Fatalf("Signature is not the last child of meta: %s", signed)
	}
	recanon, err := stage.Canonicalize([]byte(signed))
	if err != nil || string(recanon) != signed {
		t.Fatalf("output is not canonical (%v):\n%s\n%s", err, signed, recanon)
	}
}

func TestSignRefuses(t *testing.T) {
	signed := mustSign(t, key(1), envelope)
	tests := []struct {
		name    string
		key     ed25519.PrivateKey
		in      string
		wantErr error
	}{
		{"already signed", key(1), signed, ErrMalformed},
		{"not an envelope", key(1), `<message><meta/><p/></message>`, ErrMalformed},
		{"no meta first", key(1), `<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><p xmlns=""/></message>`, ErrMalformed},
		{"malformed", key(1), `<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta>`, ErrMalformed},
		{"doctype", key(1), `<!DOCTYPE message>` + envelope, ErrMalformed},
		{"short key", key(1)[:10], envelope, ErrKey},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Sign(tc.key, []byte(tc.in))
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v (out %s)", err, tc.wantErr, out)
			}
		})
	}
}

// TestVerify: each case edits a signed envelope (or signs something else)
// and expects Verify's verdict.
func TestVerify(t *testing.T) {
	k, other := key(1), key(2)
	pub := k.Public().(ed25519.PublicKey)
	signed := mustSign(t, k, envelope)
	sigRE := regexp.MustCompile(`<Signature .*</Signature>`)
	sigEl := sigRE.FindString(signed)
	unsigned := sigRE.ReplaceAllString(signed, "")
	rep := func(old, new string) string {
		if !strings.Contains(signed, old) {
			t.Fatalf("test edit: %q not in %s", old, signed)
		}
		return strings.Replace(signed, old, new, 1)
	}
	tests := []struct {
		name    string
		pub     ed25519.PublicKey
		doc     string
		wantErr error
	}{
		{"round trip", pub, signed, nil},
		{"prefixed envelope", pub, mustSign(t, k, prefixed), nil},
		{"re-serialised in ways C14N erases", pub,
			rep(`<to>shouter</to>`, `<to  >shouter</to >`) + "\n", nil},
		{"attribute order and quotes are erased by C14N", pub,
			rep(`<Note kind="plain" lang="en">`, `<Note lang='en' kind="plain">`), nil},
		{"processing instruction before the root", pub, mustSign(t, k, "<?app x?>\n"+envelope), nil},
		{"base64 wrapped with whitespace", pub,
			rep(`<SignatureValue>`, "<SignatureValue>\n"), nil},

		{"tampered payload text", pub, rep("Hello Dan!", "Hello Eve!"), ErrDigest},
		{"tampered thread", pub, rep("6f1c2a4e-8b3d", "6f1c2a4e-8b3e"), ErrDigest},
		{"tampered from", pub, rep("<from>greeter</from>", "<from>admin</from>"), ErrDigest},
		{"element added to meta", pub, rep("<thread>", "<x:extra xmlns:x=\"urn:x\"></x:extra><thread>"), ErrDigest},
		{"tampered DigestValue", pub, rep("<DigestValue>", "<DigestValue>AAAA"), ErrDigest},
		{"pretty-printed after signing", pub, strings.NewReplacer("<meta>", "\n  <meta>\n    ", "</meta>", "\n  </meta>\n  ").Replace(signed), ErrDigest},
		{"prefix renamed after signing", pub, strings.NewReplacer(
			`<message xmlns="https://xml-pipeline.org/ns/envelope/v1">`, `<e:message xmlns:e="https://xml-pipeline.org/ns/envelope/v1">`,
			"<meta>", "<e:meta>", "</meta>", "</e:meta>", "<from>", "<e:from>", "</from>", "</e:from>",
			"<to>", "<e:to>", "</to>", "</e:to>", "<thread>", "<e:thread>", "</thread>", "</e:thread>",
			"</message>", "</e:message>", `<GreetingResponse xmlns="">`, `<GreetingResponse>`).Replace(signed), ErrDigest},

		{"verified with another key", other.Public().(ed25519.PublicKey), signed, ErrSignature},
		{"signed by another key", pub, mustSign(t, other, envelope), ErrSignature},
		{"SignedInfo whitespace added", pub, rep("<SignedInfo>", "<SignedInfo>\n"), ErrSignature},
		{"SignatureValue flipped", pub, rep("<SignatureValue>", "<SignatureValue>AAAA"), ErrSignature},

		{"missing", pub, envelope, ErrUnsigned},
		{"duplicated", pub, rep("</Signature>", "</Signature>"+sigEl), ErrMalformed},
		{"moved before from", pub, strings.Replace(unsigned, "<from>", sigEl+"<from>", 1), ErrMalformed},
		{"moved into the payload", pub, strings.Replace(unsigned, "<Message>", sigEl+"<Message>", 1), ErrMalformed},
		{"a second one in the payload", pub, strings.Replace(signed, "<Message>", sigEl+"<Message>", 1), ErrMalformed},
		{"not an envelope", pub, strings.ReplaceAll(signed, "envelope/v1", "envelope/v2"), ErrMalformed},
		{"not well-formed", pub, signed[:len(signed)-3], ErrMalformed},

		{"rsa-sha256", pub, rep(AlgorithmEd25519, "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256"), ErrAlgorithm},
		{"sha1 digest", pub, rep(AlgorithmSHA256, "http://www.w3.org/2000/09/xmldsig#sha1"), ErrAlgorithm},
		{"inclusive c14n", pub, rep(`<CanonicalizationMethod Algorithm="`+AlgorithmExcC14N, `<CanonicalizationMethod Algorithm="http://www.w3.org/TR/2001/REC-xml-c14n-20010315`), ErrAlgorithm},
		{"transform dropped", pub, rep(`<Transform Algorithm="`+AlgorithmEnveloped+`"></Transform>`, ""), ErrAlgorithm},
		{"InclusiveNamespaces", pub, rep(`<Transform Algorithm="`+AlgorithmExcC14N+`"></Transform>`,
			`<Transform Algorithm="`+AlgorithmExcC14N+`"><ec:InclusiveNamespaces xmlns:ec="`+AlgorithmExcC14N+`" PrefixList="e"/></Transform>`), ErrAlgorithm},

		{"Reference URI #x", pub, rep(`<Reference URI="">`, `<Reference URI="#x">`), ErrMalformed},
		{"two References", pub, rep("</Reference>", "</Reference>"+regexp.MustCompile(`<Reference .*</Reference>`).FindString(signed)), ErrMalformed},
		{"KeyInfo added", pub, rep("</SignatureValue>", "</SignatureValue><KeyInfo><KeyName>x</KeyName></KeyInfo>"), ErrMalformed},
		{"Object added", pub, rep("</SignatureValue>", "</SignatureValue><Object>x</Object>"), ErrMalformed},
		{"DigestValue in another namespace", pub, rep("<DigestValue>", `<DigestValue xmlns="urn:x">`), ErrMalformed},
		{"SignatureValue not base64", pub, rep("<SignatureValue>", "<SignatureValue>!"), ErrMalformed},

		{"short public key", pub[:5], signed, ErrKey},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Verify(tc.pub, []byte(tc.doc))
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v\ndoc %s", err, tc.wantErr, tc.doc)
			}
			if err != nil && err.Error() == tc.wantErr.Error() && tc.wantErr != ErrUnsigned {
				t.Fatalf("error %q does not say what is wrong", err)
			}
		})
	}
}

// TestPrefixedVerifiesLikeDefault: a prefixed envelope signs to the same
// shape and its digest is over its own canonical (prefixed) form.
func TestPrefixedVerifiesLikeDefault(t *testing.T) {
	k := key(3)
	signed := mustSign(t, k, prefixed)
	parts, err := stage.SplitSignature([]byte(signed), Namespace, "Signature")
	if err != nil {
		t.Fatal(err)
	}
	canon, err := stage.Canonicalize([]byte(prefixed))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(canon), string(parts.Unsigned)); diff != "" {
		t.Fatalf("unsigned form (-want +got):\n%s", diff)
	}
	if !parts.Last || parts.Count != 1 {
		t.Fatalf("Signature not the one last child of e:meta: %s", signed)
	}
	if err := Verify(k.Public().(ed25519.PublicKey), []byte(signed)); err != nil {
		t.Fatal(err)
	}
}

// TestConcurrentUse: Sign and Verify share no state but the compiled
// profile; run under -race from several goroutines at once.
func TestConcurrentUse(t *testing.T) {
	k := key(4)
	pub := k.Public().(ed25519.PublicKey)
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range cap(errs) {
		wg.Go(func() {
			signed, err := Sign(k, []byte(envelope))
			if err == nil {
				err = Verify(pub, signed)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}
