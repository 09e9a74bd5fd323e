package stage

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/internal/lx"
)

// These tests port the reference's tests/test_pipeline_steps.py
// (python-reference.md §11.2). Where DESIGN.md §8 fixes a quirk, they assert
// the fixed behaviour.

const validEnvelope = `<?xml version="1.0"?>
<message xmlns="https://xml-pipeline.org/ns/envelope/v1">
  <meta><from>calculator.add</from><thread>550e8400-e29b-41d4-a716-446655440000</thread></meta>
  <addpayload xmlns="https://xml-pipeline.org/ns/calculator/add/v1"><a>5</a><b>3</b></addpayload>
</message>`

func newTestIngress(t testing.TB) *Ingress {
	t.Helper()
	in, err := NewIngress(IngressConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func read(t *testing.T, raw string) (*Inbound, error) {
	t.Helper()
	m, err := newTestIngress(t).Read([]byte(raw))
	if err == nil {
		t.Cleanup(m.Close)
	}
	return m, err
}

func envelopeWith(meta, payload string) string {
	return `<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta>` + meta + `</meta>` + payload + `</message>`
}

func TestValidEnvelopePassesThrough(t *testing.T) {
	m, err := read(t, validEnvelope)
	if err != nil {
		t.Fatal(err)
	}
	got := Envelope{From: m.From, Thread: m.Thread, PayloadName: m.PayloadName, PayloadNS: m.PayloadNS}
	want := Envelope{From: "calculator.add", Thread: "550e8400-e29b-41d4-a716-446655440000",
		PayloadName: "addpayload", PayloadNS: "https://xml-pipeline.org/ns/calculator/add/v1"}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("envelope (-want +got):\n%s", d)
	}
	if m.Repaired || len(m.Diagnostics) != 0 {
		t.Fatalf("valid input was repaired: %v", m.Diagnostics)
	}
	wantCanon := `<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta><from>calculator.add</from><thread>550e8400-e29b-41d4-a716-446655440000</thread></meta><addpayload xmlns="https://xml-pipeline.org/ns/calculator/add/v1"><a>5</a><b>3</b></addpayload></message>`
	if string(m.Canonical) != wantCanon {
		t.Fatalf("canonical:\n got %s\nwant %s", m.Canonical, wantCanon)
	}
	pb, err := m.PayloadBytes()
	if err != nil {
		t.Fatal(err)
	}
	if want := `<addpayload xmlns="https://xml-pipeline.org/ns/calculator/add/v1"><a>5</a><b>3</b></addpayload>`; string(pb) != want {
		t.Fatalf("payload bytes %s", pb)
	}
}

func TestMalformedInputIsRepairedOrRejectedNeverCrashes(t *testing.T) {
	tests := []struct {
		name, in string
		repaired bool
		err      error
	}{
		{"unclosed payload child", envelopeWith(`<from>a</from><thread>550e8400-e29b-41d4-a716-446655440000</thread>`,
			`<P xmlns=""><x>1</P>`), true, nil},
		{"truncated", envelopeWith(`<from>a</from><thread>550e8400-e29b-41d4-a716-446655440000</thread>`,
			`<P xmlns=""><x>1`)[:150], true, nil},
		{"bare ampersand kept", envelopeWith(`<from>a</from><thread>550e8400-e29b-41d4-a716-446655440000</thread>`,
			`<P xmlns=""><x>fish & chips</x></P>`), true, nil},
		{"reference fixture", `<message><unclosed><nested>content</nested></message>`, true, failure.ErrEnvelope},
		{"not xml", `just text`, false, failure.ErrMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := read(t, tc.in)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err = %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Repaired != tc.repaired || len(m.Diagnostics) == 0 {
				t.Fatalf("repaired = %v, diagnostics %v", m.Repaired, m.Diagnostics)
			}
		})
	}
	m, err := read(t, envelopeWith(`<from>a</from><thread>550e8400-e29b-41d4-a716-446655440000</thread>`, `<P xmlns=""><x>fish & chips</x></P>`))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(m.Canonical, []byte("fish &amp; chips")) {
		t.Fatalf("repair lost data: %s", m.Canonical)
	}
}

func TestEmptyInputIsAnError(t *testing.T) {
	_, err := read(t, "")
	if !errors.Is(err, failure.ErrEmpty) {
		t.Fatalf("err = %v", err)
	}
}

func TestC14NNormalisesWhitespaceAndAttributeOrder(t *testing.T) {
	a, err := Canonicalize([]byte(`<root z="1" a="2"/>`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Canonicalize([]byte(`<root a="2" z="1"/>`))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) || string(a) != `<root a="2" z="1"></root>` {
		t.Fatalf("%s vs %s", a, b)
	}
	if _, err := Canonicalize([]byte("<root>\n <child>   value   </child>\n</root>")); err != nil {
		t.Fatal(err)
	}
	if _, err := Canonicalize(nil); !errors.Is(err, failure.ErrEmpty) {
		t.Fatalf("empty: %v", err)
	}
}

func TestPayloadExtraction(t *testing.T) {
	const thread = `<thread>550e8400-e29b-41d4-a716-446655440000</thread>`
	tests := []struct {
		name, in string
		err      error
		diag     string
	}{
		{"multiple payloads", envelopeWith(`<from>a</from>`+thread, `<payload1 xmlns=""/><payload2 xmlns=""/>`), failure.ErrMultiplePayloads, "exactly one"},
		{"no payload", envelopeWith(`<from>a</from>`+thread, ``), failure.ErrNoPayload, "no payload"},
		{"missing meta", `<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><P xmlns=""/></message>`, failure.ErrEnvelope, "meta"},
		{"missing from", envelopeWith(thread, `<P xmlns=""/>`), failure.ErrEnvelope, "from"},
		{"empty from", envelopeWith(`<from> </from>`+thread, `<P xmlns=""/>`), failure.ErrEnvelope, "missing <from>"},
		{"empty thread", envelopeWith(`<from>a</from><thread/>`, `<P xmlns=""/>`), failure.ErrEnvelope, "missing <thread>"},
		{"meta out of order", envelopeWith(thread+`<from>a</from>`, `<P xmlns=""/>`), failure.ErrEnvelope, "from"},
		{"PI is not a payload (Q29)", envelopeWith(`<from>a</from>`+thread, `<?target data?>`), failure.ErrNoPayload, "processing instructions"},
		{"comment is not a payload", envelopeWith(`<from>a</from>`+thread, `<!-- c --><P xmlns=""/>`), nil, ""},
		{"payload in envelope namespace", envelopeWith(`<from>a</from>`+thread, `<P/>`), failure.ErrPayloadNamespace, "envelope namespace"},
		{"privileged root", `<privileged-msg xmlns="https://xml-pipeline.org/privileged-msg"/>`, failure.ErrPrivileged, "security"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := read(t, tc.in)
			if tc.err == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(tc.diag)) {
				t.Fatalf("error %q does not mention %q", err, tc.diag)
			}
		})
	}
}

func TestThreadAssignment(t *testing.T) {
	payload := `<P xmlns=""/>`
	valid := "550e8400-e29b-41d4-a716-446655440000"
	m, err := read(t, envelopeWith(`<from>a</from><thread>`+valid+`</thread>`, payload))
	if err != nil || m.Thread != valid {
		t.Fatalf("valid uuid not kept: %v %q", err, m.Thread)
	}
	for _, bad := range []string{"not-a-valid-uuid", "bad-uuid", strings.ToUpper(valid), "{" + valid + "}",
		"550e8400-e29b-11d4-a716-446655440000" /* v1 */, "550e8400-e29b-41d4-c716-446655440000" /* variant */} {
		m, err := read(t, envelopeWith(`<from>a</from><thread>`+bad+`</thread>`, payload))
		if err != nil {
			t.Fatal(err)
		}
		if m.Thread == bad || !IsThreadID(m.Thread) {
			t.Fatalf("%q replaced by %q", bad, m.Thread)
		}
		if len(m.Diagnostics) != 1 || !strings.Contains(m.Diagnostics[0].Msg, "'"+bad+"'") {
			t.Fatalf("diagnostic %v", m.Diagnostics)
		}
		if !bytes.Contains(m.Canonical, []byte("<thread>"+m.Thread+"</thread>")) {
			t.Fatalf("canonical bytes keep the old thread: %s", m.Canonical)
		}
	}
}

func TestSplitRaw(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{"single", `<result>42</result>`, []string{"<result>42</result>"}},
		{"multiple with prose", `<search.result><answer>42</answer></search.result> <calculator.add.addpayload><a>1</a><b>2</b></calculator.add.addpayload> <thought>I should also check...</thought>`,
			[]string{"<search.result><answer>42</answer></search.result>", "<calculator.add.addpayload><a>1</a><b>2</b></calculator.add.addpayload>", "<thought>I should also check...</thought>"}},
		{"preserves content", `<x><deep>value</deep></x>`, []string{"<x><deep>value</deep></x>"}},
		{"empty", ``, nil},
		{"prose only", `just words, no markup`, nil},
		{"malformed recovers", `<unclosed><valid>text</valid>`, []string{"<unclosed><valid>text</valid></unclosed>"}},
		{"bare ampersand", `<a>fish & chips</a>`, []string{"<a>fish &amp; chips</a>"}},
		{"invalid UTF-8 in text", "<a>x\xffy</a>", []string{"<a>x\uFFFDy</a>"}},
		{"invalid UTF-8 in a name", "<\xe1", []string{"<\uFFFD></\uFFFD>"}},
		{"truncated rune", "<b>caf\xc3</b> and <c/>", []string{"<b>caf\uFFFD</b>", "<c></c>"}},
		{"name not well-formed once repaired", "<: <d>kept</d>", []string{"<d>kept</d>"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			parts, diags, err := SplitRaw([]byte(tc.in))
			if !utf8.ValidString(tc.in) && !slices.ContainsFunc(diags, func(d failure.Diagnostic) bool {
				return d.Stage == failure.StageRepair && strings.Contains(d.Msg, "invalid UTF-8")
			}) {
				t.Errorf("no repair diagnostic for the invalid UTF-8: %v", diags)
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range parts {
				got = append(got, string(p.Bytes))
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Fatalf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestLexFixLeavesWellFormedInputUnchanged(t *testing.T) {
	for _, in := range []string{validEnvelope, `<a b="1" c='x &amp; y'>t &lt; &#x41;<![CDATA[ & < ]]><!-- & --><?p & ?></a>`} {
		out, diags := LexFix([]byte(in))
		if string(out) != in || diags != nil {
			t.Fatalf("changed %q → %q (%v)", in, out, diags)
		}
	}
	tests := []struct{ in, want string }{
		{`<t>fish & chips</t>`, `<t>fish &amp; chips</t>`},
		{`<u>a?x=1&y=2</u>`, `<u>a?x=1&amp;y=2</u>`},
		{`<t>1 < 2</t>`, `<t>1 &lt; 2</t>`},
		{`<t>a&nbsp;b</t>`, `<t>a&amp;nbsp;b</t>`},
		{`<env id=42><a/></env>`, `<env id="42"><a/></env>`},
		{`<env a="1" a="2"/>`, `<env a="1"/>`},
		{`<e x="a & b < c"/>`, `<e x="a &amp; b &lt; c"/>`},
		{"<t>a\x01b</t>", `<t>ab</t>`},
	}
	for _, tc := range tests {
		out, diags := LexFix([]byte(tc.in))
		if string(out) != tc.want || len(diags) == 0 {
			t.Errorf("LexFix(%q) = %q (%d diags), want %q", tc.in, out, len(diags), tc.want)
		}
	}
}

func TestAppendEnvelopeEscapes(t *testing.T) {
	env := AppendEnvelope(nil, `a<b>&"c"`, "to'x", "550e8400-e29b-41d4-a716-446655440000", []byte(`<P xmlns=""></P>`))
	m, err := read(t, string(env))
	if err != nil {
		t.Fatal(err)
	}
	if m.From != `a<b>&"c"` || m.To != "to'x" {
		t.Fatalf("from %q to %q", m.From, m.To)
	}
}

func TestCannedTextsRevealNothing(t *testing.T) {
	if failure.CannedText(failure.ErrNoRoute) != failure.CannedText(failure.ErrPayloadInvalid) {
		t.Fatal("no-such-capability and wrong-schema must read the same")
	}
	h := NewHuh(failure.ErrNoRoute, bytes.Repeat([]byte("x"), 10000))
	if len(h.OriginalAttempt) != MaxOriginalAttempt || h.Error != failure.HuhPayload {
		t.Fatalf("huh %q %d", h.Error, len(h.OriginalAttempt))
	}
}

func TestPayloadBytesMatchSubtreeC14N(t *testing.T) {
	const thread = `<thread>550e8400-e29b-41d4-a716-446655440000</thread>`
	for _, in := range []string{
		envelopeWith(`<from>a</from>`+thread, `<P xmlns=""><x a="&lt;1">t &lt; u</x></P>`),
		envelopeWith(`<from>a</from>`+thread+`<x:ext xmlns:x="urn:x"><x:meta>1</x:meta><?pi <a>?></x:ext>`, `<?pi x?><p:P xmlns:p="urn:p"><p:q/></p:P>`),
		envelopeWith(`<from>a</from><to>b</to>`+thread, `<Q xmlns="urn:q"><meta xmlns=""/></Q>`),
		// A prefixed envelope, as Python's ElementTree writes one (ns0:): the
		// root's end tag is not "</message>".
		`<ns0:message xmlns:ns0="https://xml-pipeline.org/ns/envelope/v1"><ns0:meta><ns0:from>a</ns0:from><ns0:to>greeter</ns0:to><ns0:thread>550e8400-e29b-41d4-a716-446655440000</ns0:thread></ns0:meta><Greeting><Name>Dan</Name></Greeting></ns0:message>`,
		`<env:message xmlns:env="https://xml-pipeline.org/ns/envelope/v1"><env:meta><env:from>a</env:from>` + strings.ReplaceAll(thread, "thread>", "env:thread>") + `</env:meta><P xmlns=""><x/></P></env:message>`,
	} {
		m, err := read(t, in)
		if err != nil {
			t.Fatal(err)
		}
		pb, err := m.PayloadBytes()
		if err != nil {
			t.Fatal(err)
		}
		sub, err := m.doc.C14N(m.payload, lx.C14NExc10, false, nil)
		if err != nil || string(sub) != string(pb) {
			t.Fatalf("cut %s\nsubtree %s (%v)", pb, sub, err)
		}
	}
}
