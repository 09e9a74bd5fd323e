package stage

import (
	"errors"
	"testing"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/internal/lx"
)

// FuzzRead feeds arbitrary bytes to the ingress stages: they never panic, every
// failure is a *failure.Failure with a canned text, and whatever is accepted has
// canonical bytes that are a fixed point of the stages.
func FuzzRead(f *testing.F) {
	f.Add([]byte(validEnvelope))
	f.Add([]byte(`<message><unclosed><nested>content</nested></message>`))
	f.Add([]byte(envelopeWith(`<from>a</from><thread>x</thread>`, `<P xmlns=""><x>fish & chips</x></P>`)))
	f.Add([]byte(`<!DOCTYPE x [<!ENTITY a "b">]><x>&a;</x>`))
	in := newTestIngress(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, err := in.Read(raw)
		if err != nil {
			var fl *failure.Failure
			if !errors.As(err, &fl) || fl.Canned() == "" {
				t.Fatalf("not a failure.Failure: %v", err)
			}
			return
		}
		defer m.Close()
		pb, err := m.PayloadBytes()
		if err != nil {
			t.Fatalf("accepted message without payload bytes: %v", err)
		}
		sub, err := m.doc.C14N(m.payload, lx.C14NExc10, false, nil)
		if err != nil || string(sub) != string(pb) {
			t.Fatalf("payload bytes cut from the envelope differ from the subtree C14N:\n%s\n%s", pb, sub)
		}
		again, err := in.Read(m.Canonical)
		if err != nil {
			t.Fatalf("canonical bytes rejected: %v\n%s", err, m.Canonical)
		}
		defer again.Close()
		if string(again.Canonical) != string(m.Canonical) || again.Repaired {
			t.Fatalf("canonical form is not a fixed point:\n%s\n%s", m.Canonical, again.Canonical)
		}
	})
}

// FuzzCanonicalize: C14N never panics and is idempotent.
func FuzzCanonicalize(f *testing.F) {
	f.Add([]byte(`<e xmlns:z="urn:a" xmlns:a="urn:b" b="2" a:k="3" z:k="4" a="1"/>`))
	f.Add([]byte("<doc a=\"x\ty\">t\r\n<![CDATA[<>]]></doc>"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		out, err := Canonicalize(raw)
		if err != nil {
			return
		}
		again, err := Canonicalize(out)
		if err != nil || string(again) != string(out) {
			t.Fatalf("not idempotent: %v\n%s\n%s", err, out, again)
		}
	})
}

// FuzzSplitRaw: multi-payload extraction never panics; every part is itself
// canonical XML.
func FuzzSplitRaw(f *testing.F) {
	f.Add([]byte(`<a>1</a> prose <b x="1"><c/></b>`))
	f.Add([]byte(`<unclosed><valid>text</valid>`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		parts, _, err := SplitRaw(raw)
		if err != nil {
			return
		}
		for _, p := range parts {
			if _, err := Canonicalize(p.Bytes); err != nil {
				t.Fatalf("part is not well-formed: %v\n%s", err, p.Bytes)
			}
		}
	})
}

// FuzzLexFix: the lexical pre-pass never panics and leaves well-formed input
// byte-identical.
func FuzzLexFix(f *testing.F) {
	f.Add([]byte(`<t>fish & chips</t>`))
	f.Add([]byte(`<env id=42 a="1" a="2"><a/></env>`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		out, diags := LexFix(raw)
		if _, err := Canonicalize(raw); err == nil && len(raw) > 0 && !hasDoctype(raw) {
			if string(out) != string(raw) || len(diags) != 0 {
				t.Fatalf("well-formed input changed:\n%q\n%q\n%v", raw, out, diags)
			}
		}
	})
}
