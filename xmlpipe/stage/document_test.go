package stage

import (
	"errors"
	"testing"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
)

func TestCanonicalizeChild(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		want    string
		wantErr error
	}{
		{"inherits the default namespace", `<r xmlns="urn:r" xmlns:unused="urn:u"><a  b="1"   c='2'><x/></a><sig>s</sig></r>`,
			`<a xmlns="urn:r" b="1" c="2"><x></x></a>`, nil},
		{"the root itself is not a child", `<a xmlns="urn:r" c="2" b="1"><x></x></a>`, "", ErrNoSuchElement},
		{"prefixed", `<p:r xmlns:p="urn:r"><p:a p:k="v">t&amp;</p:a></p:r>`, `<p:a xmlns:p="urn:r" p:k="v">t&amp;</p:a>`, nil},
		{"other namespace is not it", `<r xmlns="urn:r"><a xmlns="urn:other"/></r>`, "", ErrNoSuchElement},
		{"malformed", `<r xmlns="urn:r"><a></r>`, "", failure.ErrMalformed},
		{"doctype", `<!DOCTYPE r><r xmlns="urn:r"><a/></r>`, "", failure.ErrDoctype},
		{"empty", ``, "", failure.ErrEmpty},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CanonicalizeChild([]byte(tc.doc), "urn:r", "a")
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if err == nil && string(got) != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestSchemaValidate(t *testing.T) {
	s, err := CompileSchema([]byte(`<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" targetNamespace="urn:t" xmlns="urn:t" elementFormDefault="qualified">
  <xs:element name="n" type="xs:positiveInteger"/></xs:schema>`), "mem:/t.xsd")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		doc     string
		wantErr error
	}{
		{"valid", `<n xmlns="urn:t">3</n>`, nil},
		{"invalid value", `<n xmlns="urn:t">0</n>`, ErrSchema},
		{"wrong namespace", `<n>3</n>`, ErrSchema},
		{"malformed", `<n xmlns="urn:t">3`, failure.ErrMalformed},
		{"doctype", `<!DOCTYPE n><n xmlns="urn:t">3</n>`, failure.ErrDoctype},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := s.Validate([]byte(tc.doc)); !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
		})
	}
	if _, err := CompileSchema([]byte(`<nope/>`), "mem:/bad.xsd"); err == nil {
		t.Fatal("a non-schema compiled")
	}
}
