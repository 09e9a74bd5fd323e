package fields_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/fields"
)

// runCommandXSD is the schema gen writes for the run_command tool's
// payload (schemas/run_command/v1.xsd, without its documentation): Arg
// repeats.
const runCommandXSD = `<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" id="RunCommand" elementFormDefault="qualified">
  <xs:complexType name="RunCommand">
    <xs:sequence>
      <xs:element name="Command" type="xs:string"/>
      <xs:element name="Arg" type="xs:string" minOccurs="0" maxOccurs="unbounded"/>
      <xs:element name="Stdin" type="xs:string" minOccurs="0"/>
    </xs:sequence>
  </xs:complexType>
  <xs:element name="RunCommand" type="RunCommand"/>
</xs:schema>`

// inlineXSD is a schema of one element Root whose sequence is seq, its
// attributes attrs.
func inlineXSD(attrs, seq string) string {
	return `<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"><xs:element name="Root"><xs:complexType>` +
		`<xs:sequence` + attrs + `>` + seq + `</xs:sequence></xs:complexType></xs:element></xs:schema>`
}

// TestFromXSD: an XSD's children become fields, a repeated one (any
// maxOccurs above 1) a repeated field; what cannot be read is refused
// naming the element.
func TestFromXSD(t *testing.T) {
	tests := []struct {
		name    string
		xsd     string
		want    fields.List
		wantErr string
	}{
		{name: "run_command", xsd: runCommandXSD, want: fields.List{Root: "RunCommand", Fields: []fields.Field{
			{Name: "Command", Type: "string"},
			{Name: "Arg", Type: "string", Optional: true, Repeated: true},
			{Name: "Stdin", Type: "string", Optional: true},
		}}},
		{name: "bounded repeat", xsd: inlineXSD("", `<xs:element name="N" type="xs:int" maxOccurs="3"/>`),
			want: fields.List{Root: "Root", Fields: []fields.Field{{Name: "N", Type: "integer", Repeated: true}}}},
		{name: "maxOccurs 1", xsd: inlineXSD("", `<xs:element name="N" type="xs:int" maxOccurs="1"/>`),
			want: fields.List{Root: "Root", Fields: []fields.Field{{Name: "N", Type: "integer"}}}},
		{name: "optional sequence", xsd: inlineXSD(` minOccurs="0"`, `<xs:element name="N" type="xs:int"/>`),
			want: fields.List{Root: "Root", Fields: []fields.Field{{Name: "N", Type: "integer", Optional: true}}}},
		{name: "maxOccurs 0", xsd: inlineXSD("", `<xs:element name="N" type="xs:int" maxOccurs="0"/>`),
			wantErr: "Root.N: maxOccurs 0"},
		{name: "maxOccurs not a number", xsd: inlineXSD("", `<xs:element name="N" type="xs:int" maxOccurs="many"/>`),
			wantErr: `Root.N: maxOccurs "many"`},
		{name: "repeated sequence", xsd: inlineXSD(` maxOccurs="unbounded"`, `<xs:element name="N" type="xs:int"/>`),
			wantErr: "Root: a repeated sequence"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := fields.FromXSD([]byte(tt.xsd))
			if tt.wantErr != "" {
				if !errors.Is(err, fields.ErrContract) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("FromXSD: error %v, want ErrContract saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("FromXSD (-want +got):\n%s", d)
			}
		})
	}
}

// TestRepeatedFieldRoundTrip: a payload of an XSD with a repeated element
// decodes every value and encodes them again in their order (what the
// federation's imported listener forwards to the peer).
func TestRepeatedFieldRoundTrip(t *testing.T) {
	l, err := fields.FromXSD([]byte(runCommandXSD))
	if err != nil {
		t.Fatal(err)
	}
	pt, err := l.PayloadType([]byte(runCommandXSD))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, in string }{
		{name: "three", in: `<RunCommand><Command>ls</Command><Arg>-l</Arg><Arg>b</Arg><Arg>a</Arg><Stdin>x</Stdin></RunCommand>`},
		{name: "one", in: `<RunCommand><Command>ls</Command><Arg>-l</Arg></RunCommand>`},
		{name: "none", in: `<RunCommand><Command>ls</Command></RunCommand>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := pt.Decode([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			out, err := pt.AppendPayload(nil, v)
			if err != nil {
				t.Fatal(err)
			}
			want := strings.Replace(tt.in, "<RunCommand>", `<RunCommand xmlns="">`, 1)
			if d := cmp.Diff(want, string(out)); d != "" {
				t.Errorf("payload (-want +got):\n%s", d)
			}
		})
	}
}

// TestRepeatedFieldList: a field list written as data (organism.yaml's
// payload:, a WASM module's describe) may repeat a field, an enum one too;
// the derived XSD lets it occur any number of times.
func TestRepeatedFieldList(t *testing.T) {
	l := fields.List{Root: "Tags", Fields: []fields.Field{
		{Name: "Tag", Repeated: true, Enum: []string{"red", "blue"}},
		{Name: "Score", Type: "integer", Repeated: true},
	}}
	pt, err := l.PayloadType(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`<xs:element name="Tag" minOccurs="0" maxOccurs="unbounded">`,
		`<xs:element name="Score" type="xs:long" minOccurs="0" maxOccurs="unbounded"`,
	} {
		if !strings.Contains(string(pt.XSD()), want) {
			t.Errorf("derived XSD lacks %s:\n%s", want, pt.XSD())
		}
	}
	in := `<Tags xmlns=""><Tag>blue</Tag><Tag>red</Tag><Score>2</Score><Score>1</Score></Tags>`
	v, err := pt.Decode([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	out, err := pt.AppendPayload(nil, v)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(in, string(out)); d != "" {
		t.Errorf("payload (-want +got):\n%s", d)
	}
}

// TestFromXSDBuiltins: the schemas of the built-in tools of simple
// children — enumerations (an inline xs:simpleType) and repeated elements
// among them — are read as field lists whose payload type validates their
// examples, so an organism can import them from a peer; one with a
// nested element is refused naming it.
func TestFromXSDBuiltins(t *testing.T) {
	tests := []struct {
		listener string
		enums    map[string][]string // the enum of each field that has one
		wantErr  string
	}{
		{listener: "calculate"},
		{listener: "fetch", enums: map[string][]string{"Method": {"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"}}},
		{listener: "files", enums: map[string][]string{"Op": {"read", "write", "list", "delete"}}},
		{listener: "greeter"},
		{listener: "key_value", enums: map[string][]string{"Op": {"get", "set", "delete"}}},
		{listener: "run_command"},
		{listener: "web_search"},
		{listener: "xml_extract", wantErr: "XMLExtract.Namespaces: an element with child elements"},
	}
	for _, tt := range tests {
		t.Run(tt.listener, func(t *testing.T) {
			schema, err := os.ReadFile(filepath.Join("..", "..", "schemas", tt.listener, "v1.xsd"))
			if err != nil {
				t.Fatal(err)
			}
			l, err := fields.FromXSD(schema)
			if tt.wantErr != "" {
				if !errors.Is(err, fields.ErrContract) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("FromXSD: error %v, want ErrContract saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			enums := map[string][]string{}
			for _, f := range l.Fields {
				if f.Enum != nil {
					enums[f.Name] = f.Enum
				}
			}
			if d := cmp.Diff(tt.enums, enums, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("enums (-want +got):\n%s", d)
			}
			pt, err := l.PayloadType(schema)
			if err != nil {
				t.Fatal(err)
			}
			example, err := os.ReadFile(filepath.Join("..", "..", "schemas", tt.listener, "example.xml"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := pt.Decode(example); err != nil {
				t.Errorf("the example does not decode: %v", err)
			}
		})
	}
}

// TestOptionalZeroKept: an optional field given its zero value (0, false,
// "") is passed on as given, and one left out stays out — what an imported
// listener forwards to its peer, or a WASM listener to its guest.
func TestOptionalZeroKept(t *testing.T) {
	l := fields.List{Root: "R", Fields: []fields.Field{
		{Name: "N", Type: "integer", Optional: true},
		{Name: "S", Optional: true, Enum: []string{"", "x"}},
		{Name: "B", Type: "boolean", Optional: true},
		{Name: "D", Type: "double", Optional: true},
	}}
	pt, err := l.PayloadType(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{
		`<R xmlns=""><N>0</N><S></S><B>false</B><D>0</D></R>`,
		`<R xmlns=""><B>false</B></R>`,
		`<R xmlns=""></R>`,
	} {
		v, err := pt.Decode([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		out, err := pt.AppendPayload(nil, v)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(in, string(out)); d != "" {
			t.Errorf("payload (-want +got):\n%s", d)
		}
	}
}
