package wasm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

func TestFieldsPayloadType(t *testing.T) {
	f := Fields{Root: "Calc", Fields: []Field{
		{Name: "A", Type: "double", Doc: "first"},
		{Name: "N", Type: "integer", Optional: true},
		{Name: "Op", Enum: []string{"add", "sub"}},
		{Name: "Exact", Type: "boolean"},
	}}
	pt, err := f.PayloadType(nil)
	if err != nil {
		t.Fatal(err)
	}
	if pt.Name() != "Calc" {
		t.Fatalf("name %q", pt.Name())
	}
	xsd := string(pt.XSD())
	for _, want := range []string{`name="A" type="xs:double"`, `name="N" type="xs:long" minOccurs="0"`,
		`<xs:enumeration value="add"/>`, `name="Exact" type="xs:boolean"`, "first"} {
		if !strings.Contains(xsd, want) {
			t.Errorf("XSD lacks %s:\n%s", want, xsd)
		}
	}
	v, err := pt.Decode([]byte(`<Calc><A>1.5</A><Op>add</Op><Exact>true</Exact></Calc>`))
	if err != nil {
		t.Fatal(err)
	}
	out, err := pt.AppendPayload(nil, v)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "<A>1.5</A>") || strings.Contains(string(out), "<N>") {
		t.Fatalf("round trip: %s", out)
	}
}

func TestBadContracts(t *testing.T) {
	tests := []struct {
		name string
		f    Fields
		want string
	}{
		{"bad root", Fields{Root: "1x"}, "not an XML name"},
		{"bad field", Fields{Root: "R", Fields: []Field{{Name: "a b"}}}, "not an XML name"},
		{"duplicate", Fields{Root: "R", Fields: []Field{{Name: "A"}, {Name: "A"}}}, "duplicate"},
		{"type", Fields{Root: "R", Fields: []Field{{Name: "A", Type: "blob"}}}, "unknown type"},
		{"enum", Fields{Root: "R", Fields: []Field{{Name: "A", Type: "integer", Enum: []string{"1"}}}}, "enum"},
		{"enum value with the separator", Fields{Root: "R", Fields: []Field{{Name: "Op", Enum: []string{"a|b", "c"}}}}, `"a|b" holds a '|'`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.f.PayloadType(nil)
			if !errors.Is(err, ErrContract) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrContract with %q", err, tc.want)
			}
		})
	}
}

func TestFieldsFromXSD(t *testing.T) {
	good := `<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">
  <xs:element name="Add"><xs:complexType><xs:sequence>
    <xs:element name="A" type="xs:integer"/>
    <xs:element name="B" type="xs:int" minOccurs="0"/>
    <xs:element name="Label" type="xs:string"/>
  </xs:sequence></xs:complexType></xs:element>
</xs:schema>`
	f, err := FieldsFromXSD([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	want := Fields{Root: "Add", Fields: []Field{{Name: "A", Type: "integer"}, {Name: "B", Type: "integer", Optional: true},
		{Name: "Label", Type: "string"}}}
	if f.Root != want.Root || len(f.Fields) != 3 || !reflect.DeepEqual(f, want) {
		t.Fatalf("got %+v", f)
	}
	pt, err := f.PayloadType([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if string(pt.XSD()) != good {
		t.Fatal("the file's schema is not the one used")
	}
	for name, bad := range map[string]string{
		"two roots": `<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"><xs:element name="A"/><xs:element name="B"/></xs:schema>`,
		"repeated sequence": `<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"><xs:element name="A"><xs:complexType><xs:sequence maxOccurs="unbounded">
			<xs:element name="X" type="xs:string"/></xs:sequence></xs:complexType></xs:element></xs:schema>`,
		"complex child": `<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"><xs:element name="A"><xs:complexType><xs:sequence>
			<xs:element name="X" type="Mine"/></xs:sequence></xs:complexType></xs:element></xs:schema>`,
		"not xml": `<xs:schema`,
	} {
		if _, err := FieldsFromXSD([]byte(bad)); !errors.Is(err, ErrContract) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

func TestOpenResolvesTheContract(t *testing.T) {
	calc := guests.Build(t, "calc", true)
	ctx := context.Background()
	open := func(o Options) *Listener {
		t.Helper()
		o.Name, o.Cache = "calc", testCache
		if o.Module == "" {
			o.Module = calc
		}
		l, err := Open(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close(ctx) })
		return l
	}
	// From the describe export.
	l := open(Options{})
	if l.Payload().Name() != "Calc" || l.Response() == nil || l.Response().Name() != "CalcResult" {
		t.Fatalf("described: %v %v", l.Payload().Name(), l.Response())
	}
	in, err := l.Payload().Decode([]byte(`<Calc><A>2</A><B>3</B><Op>mul</Op></Calc>`))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := l.Handle(ctx, in, xmlpipe.Metadata{})
	if err != nil {
		t.Fatal(err)
	}
	r, ok := resp.(*xmlpipe.RespondResponse)
	if !ok {
		t.Fatalf("response %T", resp)
	}
	out, err := l.Response().AppendPayload(nil, r.Payload)
	if err != nil || !strings.Contains(string(out), "<Value>6</Value>") {
		t.Fatalf("answer %s, %v", out, err)
	}
	// From an xsd file; without a response the output is raw (routed by tag).
	xsd := filepath.Join(t.TempDir(), "calc.xsd")
	if err := os.WriteFile(xsd, []byte(`<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">
  <xs:element name="Calc"><xs:complexType><xs:sequence>
    <xs:element name="A" type="xs:double"/><xs:element name="B" type="xs:double"/><xs:element name="Op" type="xs:string"/>
  </xs:sequence></xs:complexType></xs:element></xs:schema>`), 0o600); err != nil {
		t.Fatal(err)
	}
	l = open(Options{XSD: xsd, Response: Fields{Root: "CalcResult", Fields: []Field{{Name: "Value", Type: "double"}}}})
	if l.Payload().Name() != "Calc" || !strings.Contains(string(l.Payload().XSD()), `type="xs:double"`) {
		t.Fatalf("xsd: %s", l.Payload().XSD())
	}
	// A command module without describe and without a contract is refused.
	_, err = Open(ctx, Options{Name: "loop", Module: guests.Build(t, "loop", false), Cache: testCache})
	if !errors.Is(err, ErrContract) {
		t.Fatalf("no contract: err = %v", err)
	}
	// A missing module file is a clear error.
	if _, err := Open(ctx, Options{Name: "x", Module: filepath.Join(t.TempDir(), "nope.wasm")}); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing module: err = %v", err)
	}
	// Bytes the caller already read are compiled as given; Module only
	// names them and is not read.
	b, err := os.ReadFile(calc)
	if err != nil {
		t.Fatal(err)
	}
	l = open(Options{Module: filepath.Join(t.TempDir(), "not-read.wasm"), Wasm: b})
	if l.Payload().Name() != "Calc" {
		t.Fatalf("from bytes: payload %s", l.Payload().Name())
	}
}

func TestCompileRefusesBadModules(t *testing.T) {
	ctx := context.Background()
	// (module (import "env" "f" (func)) (func (export "_start")))
	foreign := []byte{0, 'a', 's', 'm', 1, 0, 0, 0,
		1, 4, 1, 0x60, 0, 0, // type section: () -> ()
		2, 9, 1, 3, 'e', 'n', 'v', 1, 'f', 0, 0, // import env.f
		3, 2, 1, 0, // function section
		7, 10, 1, 6, '_', 's', 't', 'a', 'r', 't', 0, 1, // export _start = func 1
		10, 4, 1, 2, 0, 0x0b} // code
	if _, err := Compile(ctx, "foreign", foreign, Sandbox{}, nil, nil); !errors.Is(err, ErrImport) {
		t.Fatalf("foreign import: err = %v", err)
	}
	// (module (func (export "other")))
	noABI := []byte{0, 'a', 's', 'm', 1, 0, 0, 0,
		1, 4, 1, 0x60, 0, 0,
		3, 2, 1, 0,
		7, 9, 1, 5, 'o', 't', 'h', 'e', 'r', 0, 0,
		10, 4, 1, 2, 0, 0x0b}
	if _, err := Compile(ctx, "noabi", noABI, Sandbox{}, nil, nil); !errors.Is(err, ErrABI) {
		t.Fatalf("no ABI: err = %v", err)
	}
	if _, err := Compile(ctx, "junk", []byte("not wasm"), Sandbox{}, nil, nil); err == nil {
		t.Fatal("junk compiled")
	}
}
