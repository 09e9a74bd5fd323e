package stage

import (
	"encoding/xml"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"math"
	"testing"
)

// CanonPlain is a no-namespace payload exercising every shape AppendPayload
// writes for attribute-free types: text, numbers, lists, nesting, optionals.
type CanonPlain struct {
	Text  string
	Count int
	Ratio float64
	Tags  []string
	Inner CanonInner
	Note  *string
}

// CanonInner is a nested element.
type CanonInner struct {
	Line string
	On   bool
}

// CanonNS is a namespaced payload.
type CanonNS struct {
	XMLName xml.Name `xml:"urn:xmlpipe:test:canon CanonNS"`
	Body    string
	Parts   []CanonInner
}

// CanonAttr has an attribute, which C14N orders and escapes differently.
type CanonAttr struct {
	Kind string `xml:"kind,attr"`
	Body string
}

// TestCanonicalClaim: a type reports Canonical exactly when it has no
// attributes.
func TestCanonicalClaim(t *testing.T) {
	for _, tc := range []struct {
		pt   *xmlpipe.PayloadType
		want bool
	}{
		{mustPayloadType[CanonPlain](t), true},
		{mustPayloadType[CanonNS](t), true},
		{mustPayloadType[CanonAttr](t), false},
	} {
		if got := tc.pt.Canonical(); got != tc.want {
			t.Errorf("%s.Canonical() = %v, want %v", tc.pt.Name(), got, tc.want)
		}
	}
}

func mustPayloadType[T any](tb testing.TB) *xmlpipe.PayloadType {
	tb.Helper()
	pt, err := xmlpipe.PayloadTypeOf[T]()
	if err != nil {
		tb.Fatal(err)
	}
	return pt
}

// FuzzCanonical checks the claim ReadCanonical rests on: for a type whose
// xmlpipe.PayloadType.Canonical is true, the envelope AppendEnvelope (or, with a
// correlation ref, AppendEnvelopeInReplyTo) builds around
// AppendPayload's output is byte-identical to its exclusive C14N, and
// ReadCanonical and Read agree on every field.
func FuzzCanonical(f *testing.F) {
	f.Add("greeter", "shouter", "Hello Dan!", "a\r\nb\t<&>\"'", 3, 1.5, "x")
	f.Add("a.b-c", "", "\x01\uFFFE\xff", "]]>", -7, 1e300, "")
	f.Add("console", "response-handler", "  spaced  ", "émoji 🎉", 0, math.Copysign(0, -1), "\n")
	in, err := NewIngress(IngressConfig{})
	if err != nil {
		f.Fatal(err)
	}
	plain, ns := mustPayloadType[CanonPlain](f), mustPayloadType[CanonNS](f)
	f.Fuzz(func(t *testing.T, from, to, text, tag string, count int, ratio float64, note string) {
		if from == "" {
			from = "x"
		}
		values := []struct {
			pt *xmlpipe.PayloadType
			v  any
		}{
			{plain, &CanonPlain{Text: text, Count: count, Ratio: ratio, Tags: []string{tag, text, ""},
				Inner: CanonInner{Line: note, On: count%2 == 0}, Note: &note}},
			{plain, &CanonPlain{Text: tag}},
			{ns, &CanonNS{Body: text, Parts: []CanonInner{{Line: tag}, {Line: note, On: true}}}},
		}
		for _, tc := range values {
			body, err := tc.pt.AppendPayload(nil, tc.v)
			if err != nil {
				continue // unencodable values (e.g. NaN) are refused before any envelope exists
			}
			ref := ""
			if CheckRef(note) == nil {
				ref = note
			}
			env := AppendEnvelopeInReplyTo(nil, from, to, NewThreadID(), ref, body)
			canon, err := Canonicalize(env)
			if err != nil {
				t.Fatalf("envelope does not parse: %v\n%q", err, env)
			}
			if string(canon) != string(env) {
				t.Fatalf("built envelope is not canonical:\nbuilt %q\nc14n  %q", env, canon)
			}
			a, errA := in.Read(append([]byte(nil), env...))
			b, errB := in.ReadCanonical(env)
			if (errA == nil) != (errB == nil) {
				t.Fatalf("Read err %v, ReadCanonical err %v", errA, errB)
			}
			if errA != nil {
				continue
			}
			pa, _ := a.PayloadBytes()
			pb, _ := b.PayloadBytes()
			if string(a.Canonical) != string(b.Canonical) || string(pa) != string(pb) || a.From != b.From ||
				a.To != b.To || a.Thread != b.Thread || a.PayloadName != b.PayloadName || a.PayloadNS != b.PayloadNS ||
				a.InReplyTo != ref || b.InReplyTo != ref {
				t.Fatalf("Read and ReadCanonical disagree:\n%+v\n%+v", a.Envelope, b.Envelope)
			}
			a.Close()
			b.Close()
		}
	})
}
