package stage

import (
	"bytes"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/internal/lx"
)

// strictC14N is parseOrRepair's strict path followed by extract's C14N call.
// parsed is false when the strict parse does not accept b (no document, a
// severe diagnostic or a DTD); err is the C14N failure of an accepted one.
func strictC14N(b []byte) (canon []byte, parsed bool, err error) {
	doc, errs := lx.Parse(b, lx.OptNoNet|lx.OptNoBlanks)
	if doc == nil || errs.Severe() || doc.HasDTD() {
		doc.Free()
		return nil, false, nil
	}
	defer doc.Free()
	canon, err = doc.C14N(lx.Node{}, lx.C14NExc10, false, nil)
	return canon, true, err
}

// c14nTestThread is a valid thread id, so the ingress keeps it.
const c14nTestThread = "6f1c2a8e-1d3b-4c5e-9f7a-0b1c2d3e4f50"

// c14nCase is one isExcC14N input.
type c14nCase struct{ name, in string }

// nest returns depth nested <a> elements.
func nest(depth int) string {
	return strings.Repeat("<a>", depth) + strings.Repeat("</a>", depth)
}

// c14nAccepted returns inputs that are their own exclusive C14N and that
// isExcC14N must prove so: AppendEnvelope output and hand-written shapes.
func c14nAccepted(tb testing.TB) []c14nCase {
	tb.Helper()
	plain, ns := mustPayloadType[CanonPlain](tb), mustPayloadType[CanonNS](tb)
	note := "n & <b> \r ]]>"
	envelope := func(from, to string, pt *xmlpipe.PayloadType, v any) string {
		body, err := pt.AppendPayload(nil, v)
		if err != nil {
			tb.Fatal(err)
		}
		return string(AppendEnvelope(nil, from, to, c14nTestThread, body))
	}
	return []c14nCase{
		{"envelope plain payload", envelope("greeter", "shouter", plain, &CanonPlain{Text: "Hello Dan!", Count: 3,
			Ratio: 1.5, Tags: []string{"a\r\nb\t<&>\"'", "", "émoji 🎉"}, Inner: CanonInner{Line: "x", On: true}, Note: &note})},
		{"envelope escaped meta, no to", envelope("a&b<c>\r", "", plain, &CanonPlain{Text: "  spaced  "})},
		{"envelope namespaced payload", envelope("console", "response-handler", ns,
			&CanonNS{Body: "body", Parts: []CanonInner{{Line: "one"}, {Line: "two", On: true}}})},
		{"envelope foreign namespace payload", `<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta><from>calculator.add</from>` +
			`<thread>550e8400-e29b-41d4-a716-446655440000</thread></meta><addpayload xmlns="https://xml-pipeline.org/ns/calculator/add/v1">` +
			`<a>5</a><b>3</b></addpayload></message>`},
		{"single element", `<a></a>`},
		{"mixed content", `<a>x<b>y</b>z<c></c>w</a>`},
		{"text escapes", "<a>&amp;&lt;&gt;&#xD;\"' ]]&gt; \t\n é 🎉 \u0085\x7f</a>"},
		{"cr reference alone after element", `<a><b></b>&#xD;</a>`},
		{"blanks around a reference", `<a><b></b> &#xD; </a>`},
		{"blanks before a reference", `<a><b></b>  &amp;</a>`},
		{"blanks before non-ASCII text", `<a><b></b>` + strings.Repeat(" ", 400) + `é</a>`},
		{"attribute escapes", "<a v=\"&#x9;&#xA;&#xD;&amp;&lt;&quot;>'\" w=\"é\x7f\"></a>"},
		{"attribute order", `<e xmlns:a="urn:b" xmlns:z="urn:a" a="1" b="2" z:k="4" z:m="5" a:a="6" a:k="3"></e>`},
		{"byte order of prefixes and names", `<A xmlns:B="urn:b" xmlns:a="urn:a" Z="1" a="2" a:x="1" B:x="1"></A>`},
		{"prefixed elements", `<p:doc xmlns:p="urn:p"><q:x xmlns:q="urn:q" p:attr="1"></q:x><y xmlns="urn:y"><z xmlns=""></z></y></p:doc>`},
		{"prefix used by element and attribute", `<p:a xmlns:p="urn:p" p:x="1"><p:b p:y="2"></p:b></p:a>`},
		{"two prefixes one URI", `<a xmlns:p="urn:p" xmlns:q="urn:p" q:x="1" p:y="2"></a>`},
		{"default and prefix one URI", `<a xmlns="urn:x" xmlns:p="urn:x" p:y="1"></a>`},
		{"prefix redeclared", `<a xmlns:p="urn:p" p:y="1"><b xmlns:p="urn:q" p:x="1"><c xmlns:p="urn:p" p:z="1"></c></b></a>`},
		{"default redeclared", `<a xmlns="urn:one"><b xmlns="urn:two"><c xmlns="urn:one"></c></b><d xmlns:x="urn:x" x:y="1"></d></a>`},
		{"xmlns empty below prefixed element", `<a xmlns="urn:d"><p:b xmlns:p="urn:p"><c xmlns=""></c></p:b></a>`},
		{"default back after xmlns empty", `<a xmlns="urn:d"><b xmlns=""><c xmlns="urn:d"></c></b></a>`},
		{"inherited default", `<a xmlns="urn:d"><b><c></c></b></a>`},
		{"xml attributes sort by their namespace", `<a xmlns:p="http://a" b="1" p:c="2" xml:lang="en"></a>`},
		{"xml attributes before a later URI", `<a xmlns:p="zzz:x" xml:lang="en" p:c="2"></a>`},
		{"xml attributes", `<a xml:base="rel/x" xml:id="i1" xml:lang="en" xml:space="preserve"></a>`},
		{"absolute URI shapes", `<a xmlns:a="urn:x?y#z" xmlns:b="http://u@h:80/p%41/../q" xmlns:c="A1+.-:~!$()*+,;=@" ` +
			`c:z="3" b:y="2" a:x="1"></a>`},
		{"non-ASCII names", `<größe straße="ü">ä</größe>`},
		{"element named xmlns", `<xmlns></xmlns>`},
		{"deepest nesting libxml2 accepts", nest(257)},
	}
}

// c14nKind is what libxml2 does with a rejected case (checked by the test).
type c14nKind int

const (
	// c14nDiffers: the strict parse accepts it and the C14N changes the bytes.
	c14nDiffers c14nKind = iota
	// c14nRefused: the strict parse or the C14N refuses it.
	c14nRefused
	// c14nConservative: libxml2 keeps the bytes, but isExcC14N does not try to
	// prove that shape.
	c14nConservative
)

// String describes the kind in test failures.
func (k c14nKind) String() string {
	return [...]string{"C14N differs", "refused by libxml2", "canonical but not proven"}[k]
}

// c14nRejectedCase is an input isExcC14N must refuse, with what libxml2 does.
type c14nRejectedCase struct {
	name, in string
	kind     c14nKind
}

// c14nRejected has at least one case per rule of isExcC14N.
var c14nRejected = []c14nRejectedCase{
	// Nothing but the root element.
	{"empty", "", c14nRefused},
	{"text only", "x", c14nRefused},
	{"xml declaration", `<?xml version="1.0"?><a></a>`, c14nDiffers},
	{"bom", "\ufeff<a></a>", c14nDiffers},
	{"pi before root", `<?p x?><a></a>`, c14nDiffers},
	{"pi after root", `<a></a><?p x?>`, c14nDiffers},
	{"pi inside", `<a><?p x?></a>`, c14nConservative},
	{"comment before root", `<!--c--><a></a>`, c14nDiffers},
	{"comment inside", `<a><!--c--></a>`, c14nDiffers},
	{"whitespace before root", ` <a></a>`, c14nDiffers},
	{"newline after root", "<a></a>\n", c14nDiffers},
	{"cdata", `<a><![CDATA[x]]></a>`, c14nDiffers},
	{"doctype", `<!DOCTYPE a><a></a>`, c14nRefused},
	{"empty-element root", `<a/>`, c14nDiffers},
	{"empty-element child", `<a><b/></a>`, c14nDiffers},
	{"two roots", `<a></a><b></b>`, c14nRefused},
	{"unclosed", `<a>`, c14nRefused},
	{"end tag first", `</a>`, c14nRefused},
	{"mismatched end tag", `<a></b>`, c14nRefused},
	{"too deep for libxml2", nest(258), c14nRefused},
	// Carriage returns.
	{"cr in text", "<a>x\ry</a>", c14nDiffers},
	{"crlf in text", "<a>x\r\ny</a>", c14nDiffers},
	{"cr in attribute", "<a b=\"x\ry\"></a>", c14nDiffers},
	// Whitespace-only text runs.
	{"blank between elements", `<a><b></b> <c></c></a>`, c14nDiffers},
	{"newline after last child", "<a><b></b>\n</a>", c14nDiffers},
	{"tab between elements", "<a><b></b>\t<c></c></a>", c14nDiffers},
	{"blank before first child", "<a>\n<b></b></a>", c14nDiffers},
	{"long blank run", `<a><b></b>` + strings.Repeat(" ", 400) + `</a>`, c14nDiffers},
	{"blank content", `<a>  </a>`, c14nConservative},
	{"blank after a text child", `<a>x<b></b>  <c></c></a>`, c14nConservative},
	{"blank under xml:space preserve", `<a xml:space="preserve"><b></b> <c></c></a>`, c14nConservative},
	// Tag syntax.
	{"two spaces", `<a  b="1"></a>`, c14nDiffers},
	{"single quotes", `<a b='1'></a>`, c14nDiffers},
	{"space around equals", `<a b = "1"></a>`, c14nDiffers},
	{"space before >", `<a b="1" ></a>`, c14nDiffers},
	{"space after name", `<a ></a>`, c14nDiffers},
	{"space in end tag", `<a></a >`, c14nDiffers},
	{"tab separator", "<a\tb=\"1\"></a>", c14nDiffers},
	{"newline separator", "<a\nb=\"1\"></a>", c14nDiffers},
	{"attribute without value", `<a b></a>`, c14nRefused},
	// References and literal markup in text.
	{"literal > in text", `<a>x>y</a>`, c14nDiffers},
	{"&quot; in text", `<a>&quot;</a>`, c14nDiffers},
	{"&apos; in text", `<a>&apos;</a>`, c14nDiffers},
	{"decimal reference in text", `<a>&#65;</a>`, c14nDiffers},
	{"hex reference in text", `<a>&#x41;</a>`, c14nDiffers},
	{"lowercase cr reference in text", `<a>&#xd;</a>`, c14nDiffers},
	{"decimal cr reference in text", `<a>&#13;</a>`, c14nDiffers},
	{"space reference after element", `<a><b></b>&#x20;</a>`, c14nDiffers},
	{"undeclared entity", `<a>&x;</a>`, c14nRefused},
	{"bare ampersand", `<a>&</a>`, c14nRefused},
	{"nul", "<a>\x00</a>", c14nRefused},
	{"invalid utf-8", "<a>\xff</a>", c14nRefused},
	{"U+FFFE", "<a>\ufffe</a>", c14nRefused},
	// Attribute values.
	{"literal < in value", `<a b="<"></a>`, c14nRefused},
	{"literal tab in value", "<a b=\"x\ty\"></a>", c14nDiffers},
	{"literal newline in value", "<a b=\"x\ny\"></a>", c14nDiffers},
	{"&gt; in value", `<a b="&gt;"></a>`, c14nDiffers},
	{"&apos; in value", `<a b="&apos;"></a>`, c14nDiffers},
	{"space reference in value", `<a b="&#x20;"></a>`, c14nDiffers},
	{"decimal tab reference in value", `<a b="&#9;"></a>`, c14nDiffers},
	{"lowercase newline reference in value", `<a b="&#xa;"></a>`, c14nDiffers},
	// Namespace declarations.
	{"redundant default", `<a xmlns="urn:x"><b xmlns="urn:x"></b></a>`, c14nDiffers},
	{"redundant prefix", `<a xmlns:p="urn:p" p:x="1"><b xmlns:p="urn:p" p:y="1"></b></a>`, c14nDiffers},
	{"unused prefix", `<a xmlns:p="urn:p"></a>`, c14nDiffers},
	{"prefix used only below", `<a xmlns:p="urn:p"><p:b></p:b></a>`, c14nDiffers},
	{"default on prefixed element", `<p:a xmlns="urn:d" xmlns:p="urn:p"></p:a>`, c14nDiffers},
	{"default used only by unprefixed attribute", `<p:a xmlns="urn:d" xmlns:p="urn:p" b="1"></p:a>`, c14nDiffers},
	{"xmlns empty at root", `<a xmlns=""></a>`, c14nDiffers},
	{"xmlns empty in empty default", `<a xmlns="urn:d"><b xmlns=""><c xmlns=""></c></b></a>`, c14nDiffers},
	{"xmlns empty under prefixed root", `<p:a xmlns:p="urn:p"><b xmlns=""></b></p:a>`, c14nDiffers},
	{"xmlns empty on prefixed element", `<a xmlns="urn:d"><p:b xmlns="" xmlns:p="urn:p"><c></c></p:b></a>`, c14nDiffers},
	{"element prefix not in scope", `<p:a></p:a>`, c14nRefused},
	{"attribute prefix not in scope", `<a p:x="1"></a>`, c14nRefused},
	{"prefix out of scope again", `<a><p:b xmlns:p="urn:p"></p:b><p:c></p:c></a>`, c14nRefused},
	{"relative default", `<a xmlns="rel"></a>`, c14nRefused},
	{"relative prefixed", `<a xmlns:p="rel" p:x="1"></a>`, c14nRefused},
	{"scheme-less with colon later", `<a xmlns:p="1a:x" p:x="1"></a>`, c14nRefused},
	{"reference in URI", `<a xmlns:p="urn:a&amp;b" p:x="1"></a>`, c14nDiffers},
	{"space in URI", `<a xmlns:p="urn:a b" p:x="1"></a>`, c14nRefused},
	{"bad escape in URI", `<a xmlns:p="urn:a%zz" p:x="1"></a>`, c14nRefused},
	{"two fragments in URI", `<a xmlns:p="urn:a#b#c" p:x="1"></a>`, c14nRefused},
	{"apostrophe in URI", `<a xmlns:p="urn:a'b" p:x="1"></a>`, c14nConservative},
	{"IPv6 literal in URI", `<a xmlns:p="http://[::1]/" p:x="1"></a>`, c14nConservative},
	{"empty prefixed declaration", `<a xmlns:p="" p:x="1"></a>`, c14nRefused},
	{"xmlns:xml", `<a xmlns:xml="http://www.w3.org/XML/1998/namespace"></a>`, c14nDiffers},
	{"xml namespace as default", `<a xmlns="http://www.w3.org/XML/1998/namespace"></a>`, c14nRefused},
	{"xml namespace on another prefix", `<a xmlns:p="http://www.w3.org/XML/1998/namespace" p:x="1"></a>`, c14nRefused},
	{"xmlns namespace", `<a xmlns:p="http://www.w3.org/2000/xmlns/" p:x="1"></a>`, c14nRefused},
	{"xmlns:xmlns", `<a xmlns:xmlns="urn:x"></a>`, c14nRefused},
	{"xml-prefixed element", `<xml:a></xml:a>`, c14nConservative},
	{"xmlns-prefixed element", `<xmlns:a></xmlns:a>`, c14nRefused},
	{"p:xmlns attribute", `<a xmlns:p="urn:p" p:xmlns="1"></a>`, c14nConservative},
	{"two colons", `<a xmlns:b="urn:b" b:c:d="1"></a>`, c14nRefused},
	{"more namespaces in scope than the checker follows", nestPrefixes(c14nMaxNS + 1), c14nConservative},
	// Order.
	{"declaration after attribute", `<a b="1" xmlns="urn:x"></a>`, c14nDiffers},
	{"prefixes unsorted", `<a xmlns:b="urn:b" xmlns:a="urn:a" b:x="1" a:x="2"></a>`, c14nDiffers},
	{"default after prefixed", `<a xmlns:p="urn:p" xmlns="urn:d" p:x="1"></a>`, c14nDiffers},
	{"duplicate declaration", `<a xmlns:p="urn:p" xmlns:p="urn:p" p:x="1"></a>`, c14nRefused},
	{"attributes unsorted", `<a b="1" a="2"></a>`, c14nDiffers},
	{"duplicate attribute", `<a b="1" b="1"></a>`, c14nRefused},
	{"qualified before unqualified", `<a xmlns:p="urn:p" p:x="1" b="2"></a>`, c14nDiffers},
	{"qualified sorted by prefix, not URI", `<e xmlns:a="urn:b" xmlns:z="urn:a" a:k="3" z:k="4"></e>`, c14nDiffers},
	{"qualified same URI unsorted", `<a xmlns:p="urn:p" xmlns:q="urn:p" p:y="1" q:x="2"></a>`, c14nDiffers},
	{"xml attribute out of order", `<a xmlns:p="http://a" xml:lang="en" p:c="2"></a>`, c14nDiffers},
}

// nestPrefixes returns n nested elements, each in its own prefixed namespace.
func nestPrefixes(n int) string {
	var open, end string
	for i := range n {
		p := "p" + strings.Repeat("x", i)
		open += "<" + p + ":a xmlns:" + p + `="urn:` + p + `">`
		end = "</" + p + ":a>" + end
	}
	return open + end
}

var (
	// blankRun matches a whitespace-only text run in canonical XML (a literal
	// '>' followed by '<' can only be a tag end: values escape '<').
	blankRun = regexp.MustCompile(`>[ \t\n]+<`)
	// nsDecl matches a namespace declaration and captures its value.
	nsDecl = regexp.MustCompile(` xmlns(?::[^ =]+)?="([^"]*)"`)
	// xmlElement matches an xml:-prefixed element tag.
	xmlElement = regexp.MustCompile(`</?xml:`)
	// xmlnsAttr matches an attribute with the local name xmlns and a prefix.
	xmlnsAttr = regexp.MustCompile(` [^ =]+:xmlns="`)
)

// unprovenShape names the shape of libxml2 C14N output that isExcC14N
// deliberately does not prove, or returns "" — for such output the fast path
// must fire.
func unprovenShape(c []byte) string {
	switch {
	case bytes.Contains(c, []byte("<?")):
		return "processing instruction"
	case blankRun.Match(c):
		return "whitespace-only text"
	case xmlElement.Match(c):
		return "xml:-prefixed element"
	case xmlnsAttr.Match(c):
		return "p:xmlns attribute"
	}
	decls := nsDecl.FindAllSubmatch(c, -1)
	if len(decls) > c14nMaxNS {
		return "more namespace declarations than the checker follows"
	}
	for _, d := range decls {
		if bytes.ContainsAny(d[1], "'[]&") {
			return "namespace URI outside the checker's syntax"
		}
	}
	return ""
}

// TestIsExcC14N: every accepted case is proven and equals libxml2's C14N of
// its strict parse; every rejected case is refused, and libxml2 does with it
// what the case says (so each rule is checked against libxml2, not memory);
// the C14N output of every document under testdata is proven unless it has a
// shape the checker deliberately leaves to libxml2.
func TestIsExcC14N(t *testing.T) {
	for _, tc := range c14nAccepted(t) {
		t.Run("accept/"+tc.name, func(t *testing.T) {
			canon, parsed, err := strictC14N([]byte(tc.in))
			if !parsed || err != nil {
				t.Fatalf("libxml2 refuses it (parsed %v, C14N %v)", parsed, err)
			}
			if d := cmp.Diff(tc.in, string(canon)); d != "" {
				t.Fatalf("not its own C14N (-in +c14n):\n%s", d)
			}
			if !isExcC14N([]byte(tc.in)) {
				t.Fatalf("isExcC14N = false for canonical %q", tc.in)
			}
		})
	}
	for _, tc := range c14nRejected {
		t.Run("reject/"+tc.name, func(t *testing.T) {
			if isExcC14N([]byte(tc.in)) {
				t.Fatalf("isExcC14N = true for %q", tc.in)
			}
			canon, parsed, err := strictC14N([]byte(tc.in))
			got := c14nDiffers
			switch {
			case !parsed || err != nil:
				got = c14nRefused
			case string(canon) == tc.in:
				got = c14nConservative
			}
			if got != tc.kind {
				t.Errorf("libxml2: %v, want %v (c14n %q)", got, tc.kind, canon)
			}
		})
	}
	var files []string
	for _, root := range []string{"testdata", "../../testdata"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				files = append(files, path)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	parsedFiles := 0
	for _, f := range files {
		t.Run("file/"+f, func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			canon, parsed, err := strictC14N(raw)
			if !parsed || err != nil {
				if isExcC14N(raw) {
					t.Fatalf("isExcC14N = true for a document libxml2 refuses")
				}
				return
			}
			parsedFiles++
			if isExcC14N(raw) && !bytes.Equal(raw, canon) {
				t.Fatalf("isExcC14N = true, but the C14N differs:\n%s", cmp.Diff(string(raw), string(canon)))
			}
			again, _, _ := strictC14N(canon)
			if !bytes.Equal(again, canon) {
				t.Fatalf("C14N output is not a fixed point")
			}
			why := unprovenShape(canon)
			if got := isExcC14N(canon); got != (why == "") {
				t.Fatalf("isExcC14N(C14N output) = %v (unproven shape: %q)\n%s", got, why, canon)
			}
			if why != "" {
				t.Logf("C14N output left to libxml2: %s", why)
			}
		})
	}
	t.Logf("%d of %d testdata files parse strictly", parsedFiles, len(files))
	if parsedFiles < 10 {
		t.Fatalf("only %d testdata documents parse; expected the c14n and hostile sets", parsedFiles)
	}
}

// TestReadSkipsC14NOfCanonicalInput: Read takes an already canonical envelope
// as its own Canonical form (a copy: the caller may reuse raw), and still
// canonicalises one that is not.
func TestReadSkipsC14NOfCanonicalInput(t *testing.T) {
	in := newTestIngress(t)
	pt := mustPayloadType[CanonNS](t)
	body, err := pt.AppendPayload(nil, &CanonNS{Body: "a & b", Parts: []CanonInner{{Line: "x"}}})
	if err != nil {
		t.Fatal(err)
	}
	env := AppendEnvelope(nil, "greeter", "shouter", c14nTestThread, body)
	if !isExcC14N(env) {
		t.Fatalf("built envelope not proven canonical: %s", env)
	}
	m, err := in.Read(env)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if d := cmp.Diff(string(env), string(m.Canonical)); d != "" {
		t.Fatalf("Canonical (-raw +got):\n%s", d)
	}
	if &m.Canonical[0] == &env[0] {
		t.Fatal("Canonical aliases the caller's buffer")
	}
	pb, err := m.PayloadBytes()
	if err != nil || string(pb) != string(body) {
		t.Fatalf("PayloadBytes = %q, %v; want %q", pb, err, body)
	}

	pretty := []byte(validEnvelope)
	want, _, err := strictC14N(pretty)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := in.Read(pretty)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if d := cmp.Diff(string(want), string(m2.Canonical)); d != "" {
		t.Fatalf("Canonical of a non-canonical envelope (-c14n +got):\n%s", d)
	}

	// A replaced thread id still goes through libxml2's C14N.
	bad := AppendEnvelope(nil, "greeter", "", "not-a-thread-id", body)
	m3, err := in.Read(bad)
	if err != nil {
		t.Fatal(err)
	}
	defer m3.Close()
	if bytes.Equal(m3.Canonical, bad) || !bytes.Contains(m3.Canonical, []byte(m3.Thread)) {
		t.Fatalf("thread id not replaced in Canonical: %s", m3.Canonical)
	}
}

// FuzzIsExcC14N checks isExcC14N against libxml2. Soundness: whenever the
// strict parse accepts the input and isExcC14N is true, libxml2's exclusive
// C14N succeeds and equals the input byte for byte. Reach: libxml2's C14N
// output of any accepted input, when it is a fixed point and has none of the
// shapes the checker leaves to libxml2 (unprovenShape), is proven; and every
// envelope AppendEnvelope builds around a Canonical payload type is proven
// unless it has whitespace-only text.
func FuzzIsExcC14N(f *testing.F) {
	for _, tc := range c14nAccepted(f) {
		f.Add([]byte(tc.in))
	}
	for _, tc := range c14nRejected {
		f.Add([]byte(tc.in))
	}
	plain, ns := mustPayloadType[CanonPlain](f), mustPayloadType[CanonNS](f)
	f.Fuzz(func(t *testing.T, b []byte) {
		canon, parsed, cerr := strictC14N(b)
		if parsed && isExcC14N(b) {
			if cerr != nil {
				t.Fatalf("isExcC14N = true, but libxml2's C14N fails: %v\n%q", cerr, b)
			}
			if !bytes.Equal(canon, b) {
				t.Fatalf("isExcC14N = true, but the C14N differs:\nin   %q\nc14n %q", b, canon)
			}
		}
		if parsed && cerr == nil && unprovenShape(canon) == "" && !isExcC14N(canon) {
			if again, ok, err := strictC14N(canon); ok && err == nil && bytes.Equal(again, canon) {
				t.Fatalf("C14N output not proven canonical:\n%q\n(from %q)", canon, b)
			}
		}
		s := string(b)
		for _, v := range []struct {
			pt *xmlpipe.PayloadType
			v  any
		}{
			{plain, &CanonPlain{Text: s, Tags: []string{s, ""}, Inner: CanonInner{Line: s}, Note: &s}},
			{ns, &CanonNS{Body: s, Parts: []CanonInner{{Line: s, On: true}}}},
		} {
			body, err := v.pt.AppendPayload(nil, v.v)
			if err != nil {
				continue
			}
			env := AppendEnvelope(nil, "x"+s, s, c14nTestThread, body)
			got, ok, err := strictC14N(env)
			if !ok || err != nil || !bytes.Equal(got, env) {
				t.Fatalf("built envelope is not canonical (%v, %v):\nbuilt %q\nc14n  %q", ok, err, env, got)
			}
			if !blankRun.Match(env) && !isExcC14N(env) {
				t.Fatalf("built envelope not proven canonical: %q", env)
			}
		}
	})
}

// TestSkipText: the word-at-a-time scan stops exactly where a byte-by-byte
// scan over textPlain does, for every byte value at every offset of a word.
func TestSkipText(t *testing.T) {
	naive := func(b []byte, i int) int {
		for i < len(b) && textPlain[b[i]] {
			i++
		}
		return i
	}
	for c := range 256 {
		for pos := range 20 {
			for _, n := range []int{pos + 1, 24} {
				b := bytes.Repeat([]byte("a=?'\"\x7f z"), 3)[:n]
				b[pos] = byte(c)
				for from := 0; from <= pos; from++ {
					if got, want := skipText(b, from), naive(b, from); got != want {
						t.Fatalf("byte %#x at %d of %q from %d: skipText = %d, want %d", c, pos, b, from, got, want)
					}
				}
			}
		}
	}
}
