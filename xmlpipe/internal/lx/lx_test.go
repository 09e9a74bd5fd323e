package lx

import (
	"strings"
	"sync"
	"testing"
)

const intSchema = `<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">
  <xs:element name="t"><xs:complexType><xs:sequence>
    <xs:element name="i" type="xs:integer" maxOccurs="unbounded"/>
  </xs:sequence></xs:complexType></xs:element>
</xs:schema>`

func mustParse(t *testing.T, s string, opts Options) *Doc {
	t.Helper()
	d, e := Parse([]byte(s), opts)
	if d == nil || e.Severe() {
		t.Fatalf("parse %q: %v", s, e)
	}
	return d
}

func TestParseStrictReportsErrorsWithLines(t *testing.T) {
	tests := []struct {
		name, in string
		wantDoc  bool
		wantMsg  string
	}{
		{"unclosed", "<a>\n<b></a>", false, "Opening and ending tag mismatch"},
		{"undeclared prefix", "<a><p:b/></a>", true, "Namespace prefix p on b is not defined"},
		{"empty", "", false, "empty input"},
		{"too deep", strings.Repeat("<a>", 10000) + strings.Repeat("</a>", 10000), false, "depth"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, e := Parse([]byte(tc.in), OptNoNet|OptNoBlanks)
			defer d.Free()
			if (d != nil) != tc.wantDoc {
				t.Fatalf("doc = %v, want doc %v", d != nil, tc.wantDoc)
			}
			if !e.Severe() {
				t.Fatalf("no severe diagnostic: %v", e)
			}
			if !strings.Contains(strings.ToLower(e.Error()), strings.ToLower(tc.wantMsg)) {
				t.Fatalf("diagnostics %q do not mention %q", e.Error(), tc.wantMsg)
			}
		})
	}
}

func TestRecoverRepairsStructure(t *testing.T) {
	d, e := Parse([]byte("<env><a>1</a><b>2</env>"), OptRecover|OptNoNet)
	if d == nil {
		t.Fatalf("recover returned no doc: %v", e)
	}
	defer d.Free()
	if !e.Severe() {
		t.Fatalf("recover did not report the repair")
	}
	got, err := d.C14N(Node{}, C14NExc10, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := "<env><a>1</a><b>2</b></env>"; string(got) != want {
		t.Fatalf("got %s want %s", got, want)
	}
}

// TestReusedContextForgetsOptions: a pooled parser context used with
// NOBLANKS parses the next document without it as a fresh context would,
// whitespace kept (libxml2 leaves the SAX handler NOBLANKS installs in
// place; NOCDATA's is reset by the same call, but C14N cannot show it).
// More parses than the pool holds pass NOBLANKS through every pooled context
// before the plain parses.
func TestReusedContextForgetsOptions(t *testing.T) {
	const in = "<r>\n  <a>x</a>\n</r>"
	for range 2 * cap(ctxtPool) {
		d := mustParse(t, in, OptNoNet|OptNoBlanks)
		d.Free()
	}
	for i := range 2 * cap(ctxtPool) {
		d := mustParse(t, in, OptNoNet)
		got, err := d.C14N(Node{}, C14NExc10, false, nil)
		d.Free()
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != in {
			t.Fatalf("plain parse %d after NOBLANKS ones: C14N %q, want %q", i, got, in)
		}
	}
}

func TestDTDDetected(t *testing.T) {
	d, _ := Parse([]byte(`<!DOCTYPE r [<!ENTITY x "y">]><r>&x;</r>`), OptNoNet)
	if d == nil {
		t.Fatal("no doc")
	}
	defer d.Free()
	if !d.HasDTD() {
		t.Fatal("HasDTD = false")
	}
}

func TestSubtreeC14N(t *testing.T) {
	in := `<m xmlns="urn:env" xmlns:c="urn:c" xmlns:unused="urn:u"><meta><from>x</from></meta><c:p a="1"><c:v>1</c:v><w xmlns="">2</w></c:p></m>`
	d := mustParse(t, in, OptNoNet)
	defer d.Free()
	p := d.Root().FirstElement().NextElement()
	got, err := d.C14N(p, C14NExc10, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `<c:p xmlns:c="urn:c" a="1"><c:v>1</c:v><w>2</w></c:p>`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	// A no-namespace payload inside a default-namespace envelope.
	d2 := mustParse(t, `<message xmlns="urn:e"><meta/><Greeting xmlns=""><Name>Dan</Name></Greeting></message>`, OptNoNet)
	defer d2.Free()
	got, err = d2.C14N(d2.Root().FirstElement().NextElement(), C14NExc10, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := `<Greeting><Name>Dan</Name></Greeting>`; string(got) != want {
		t.Fatalf("got %s want %s", got, want)
	}
}

func TestValidateCompleteErrorListAndLongMessages(t *testing.T) {
	s, e := CompileSchema([]byte(intSchema), "mem:/test/int.xsd")
	if s == nil {
		t.Fatal(e)
	}
	var b strings.Builder
	b.WriteString("<t>")
	for i := 0; i < 100; i++ {
		b.WriteString("<i>x</i>")
	}
	b.WriteString("<i>" + strings.Repeat("9x", 30000) + "</i></t>")
	d := mustParse(t, b.String(), OptNoNet)
	defer d.Free()
	errs := s.Validate(d)
	if errs == nil || len(errs.List) != 101 {
		t.Fatalf("want 101 errors, got %v", errs)
	}
	last := errs.List[100]
	if last.Path != "/t/i[101]" || len(last.Msg) < 1000 {
		t.Fatalf("last error path %q len %d", last.Path, len(last.Msg))
	}
	if errs := s.ValidateElement(d.Root()); errs == nil {
		t.Fatal("ValidateElement accepted invalid subtree")
	}
	ok := mustParse(t, "<t><i> 42 </i></t>", OptNoNet)
	defer ok.Free()
	if errs := s.Validate(ok); errs != nil {
		t.Fatalf("valid doc rejected: %v", errs)
	}
}

func TestSchemaCompileErrorsAndDeniedLoads(t *testing.T) {
	_, e := CompileSchema([]byte(`<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"><xs:element name="a" type="xs:nosuchtype"/></xs:schema>`), "")
	if e == nil || !strings.Contains(e.Error(), "nosuchtype") {
		t.Fatalf("compile error not reported: %v", e)
	}
	_, e = CompileSchema([]byte(`<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"><xs:include schemaLocation="file:///etc/passwd"/></xs:schema>`), "")
	if e == nil {
		t.Fatal("include of a file was not denied")
	}
	if err := RegisterResource("mem:/test/inc.xsd", []byte(`<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"><xs:element name="inc" type="xs:string"/></xs:schema>`)); err != nil {
		t.Fatal(err)
	}
	s, e := CompileSchema([]byte(`<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"><xs:include schemaLocation="inc.xsd"/></xs:schema>`), "mem:/test/main.xsd")
	if s == nil {
		t.Fatalf("registered include failed: %v", e)
	}
	d := mustParse(t, "<inc>x</inc>", OptNoNet)
	defer d.Free()
	if errs := s.Validate(d); errs != nil {
		t.Fatal(errs)
	}
}

func TestConcurrentSharedSchema(t *testing.T) {
	s, e := CompileSchema([]byte(intSchema), "")
	if s == nil {
		t.Fatal(e)
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				d, _ := Parse([]byte("<t><i>1</i><i>x</i></t>"), OptNoNet)
				errs := s.Validate(d)
				if _, err := d.C14N(Node{}, C14NExc10, false, nil); err != nil {
					t.Error(err)
				}
				d.Free()
				if errs == nil || len(errs.List) != 1 {
					t.Errorf("want 1 error, got %v", errs)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestC14NWithout: the hidden element goes with its attributes, namespace
// declarations and descendants; the whitespace around it stays; the rest is
// byte for byte the exclusive C14N of the document written without it.
func TestC14NWithout(t *testing.T) {
	tests := []struct {
		name, in string
		hide     func(d *Doc) Node
		want     string
	}{
		{
			name: "enveloped signature, default namespaces",
			in:   "<m xmlns=\"urn:e\"><meta><from>a</from> <S xmlns=\"urn:d\" Id=\"x\"><SI>1</SI></S>\n</meta><p xmlns=\"\">t</p></m>",
			hide: func(d *Doc) Node { return d.Root().FirstElement().FirstElement().NextElement() },
			want: "<m xmlns=\"urn:e\"><meta><from>a</from> \n</meta><p xmlns=\"\">t</p></m>",
		},
		{
			name: "prefixed, hidden element uses the root's prefix",
			in:   `<e:m xmlns:e="urn:e" xmlns:ds="urn:d"><e:meta><e:from>a</e:from><ds:S e:a="1"><ds:V/></ds:S></e:meta></e:m>`,
			hide: func(d *Doc) Node { return d.Root().FirstElement().FirstElement().NextElement() },
			want: `<e:m xmlns:e="urn:e"><e:meta><e:from>a</e:from></e:meta></e:m>`,
		},
		{
			name: "hidden first child, later siblings keep their namespaces",
			in:   `<r xmlns:a="urn:a"><a:x/><a:y k="v"/></r>`,
			hide: func(d *Doc) Node { return d.Root().FirstElement() },
			want: `<r><a:y xmlns:a="urn:a" k="v"></a:y></r>`,
		},
		{
			name: "zero node is the whole document",
			in:   `<r><x/></r>`,
			hide: func(*Doc) Node { return Node{} },
			want: `<r><x></x></r>`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := mustParse(t, tc.in, OptNoNet)
			defer d.Free()
			got, err := d.C14NWithout(tc.hide(d), C14NExc10, false, nil)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	running, built := Version()
	for _, v := range []string{running, built} {
		if parts := strings.Split(v, "."); len(parts) != 3 || parts[0] != "2" {
			t.Errorf("Version() = %q, %q: want dotted libxml2 2.x.y versions", running, built)
		}
	}
	for in, want := range map[string]string{"20914": "2.9.14", "21201": "2.12.1", "x": "x", "": ""} {
		if got := dotted(in); got != want {
			t.Errorf("dotted(%q) = %q, want %q", in, got, want)
		}
	}
}
