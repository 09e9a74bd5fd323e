package stage

import (
	"encoding/xml"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
)

// Probe is the payload the hostile inputs target: an integer, an enumeration
// and a pattern-restricted field (the checks whose long error messages crash
// lestrrat's wrapper, go-deps.md §2.1).
type Probe struct {
	XMLName xml.Name `xml:"Probe"`
	Text    string
	Count   int    `xml:",omitempty"`
	Level   string `xml:",omitempty"`
	Code    string `xml:",omitempty"`
}

const probeXSD = `<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" elementFormDefault="qualified">
  <xs:element name="Probe"><xs:complexType><xs:sequence>
    <xs:element name="Text" type="xs:string"/>
    <xs:element name="Count" type="xs:integer" minOccurs="0"/>
    <xs:element name="Level" minOccurs="0"><xs:simpleType><xs:restriction base="xs:string">
      <xs:enumeration value="low"/><xs:enumeration value="high"/></xs:restriction></xs:simpleType></xs:element>
    <xs:element name="Code" minOccurs="0"><xs:simpleType><xs:restriction base="xs:string">
      <xs:pattern value="[A-Z]{2}"/></xs:restriction></xs:simpleType></xs:element>
  </xs:sequence></xs:complexType></xs:element>
</xs:schema>`

// hostileExpect is the sentinel each hostile input must fail with.
var hostileExpect = map[string]error{
	"billion-laughs.xml":        failure.ErrDoctype,
	"xxe.xml":                   failure.ErrDoctype,
	"doctype.xml":               failure.ErrDoctype,
	"doctype-after-comment.xml": failure.ErrDoctype,
	"long-integer.xml":          failure.ErrPayloadInvalid,
	"long-enum.xml":             failure.ErrPayloadInvalid,
	"long-pattern.xml":          failure.ErrPayloadInvalid,
	// libxml2 stops at depth 256; the repair path keeps what it could read
	// (recorded as repairs) and the payload then fails its schema.
	"deep-nesting.xml":               failure.ErrPayloadInvalid,
	"invalid-utf8.xml":               failure.ErrEncoding,
	"pi-only-payload.xml":            failure.ErrNoPayload,
	"two-payloads.xml":               failure.ErrMultiplePayloads,
	"envelope-namespace-payload.xml": failure.ErrPayloadNamespace,
	"empty.xml":                      failure.ErrEmpty,
	"privileged-root.xml":            failure.ErrPrivileged,
	"garbage.xml":                    failure.ErrMalformed,
	// libxml2's duplicate check and C14N are quadratic in an element's
	// attributes: more than lx.MaxAttributes are refused before parsing.
	"many-attributes.xml": failure.ErrMalformed,
	// spoofed-system-sender.xml passes the stages; the pump rejects the sender.
	"spoofed-system-sender.xml": nil,
}

// TestHostileInputs runs every file of testdata/hostile through the stages and
// the Probe payload validation: each gets a clean failure with a canned <huh>
// text and a diagnostic, within 50 ms, and nothing crashes.
func TestHostileInputs(t *testing.T) {
	in := newTestIngress(t)
	pt, err := xmlpipe.PayloadTypeOf[Probe](xmlpipe.WithSchema([]byte(probeXSD)))
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("../../testdata/hostile/*.xml")
	if len(files) != len(hostileExpect) {
		t.Fatalf("%d hostile files, %d expectations", len(files), len(hostileExpect))
	}
	cases := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cases[filepath.Base(f)] = b
	}
	over := append([]byte(`<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta><from>x</from><thread>t</thread></meta><Probe xmlns=""><Text>`), make([]byte, DefaultMaxBytes)...)
	cases["(generated) over-cap"] = over
	for name, raw := range cases {
		t.Run(name, func(t *testing.T) {
			want, known := hostileExpect[name]
			if name == "(generated) over-cap" {
				want, known = failure.ErrTooLarge, true
			}
			if !known {
				t.Fatalf("no expectation for %s", name)
			}
			start := time.Now()
			err := func() error {
				m, err := in.Read(raw)
				if err != nil {
					return err
				}
				defer m.Close()
				_, _, err = m.Decode(pt)
				return err
			}()
			elapsed := time.Since(start)
			if want == nil {
				if err != nil {
					t.Fatalf("unexpected failure %v", err)
				}
				return
			}
			if !errors.Is(err, want) {
				t.Fatalf("err = %v, want %v", err, want)
			}
			var f *failure.Failure
			if !errors.As(err, &f) || len(f.Diagnostics) == 0 || f.Canned() == "" {
				t.Fatalf("failure without diagnostics or canned text: %#v", err)
			}
			huh := NewHuh(err, raw)
			if strings.Contains(huh.Error, "Probe") || strings.Contains(huh.Error, "line") {
				t.Fatalf("<huh> leaks details: %q", huh.Error)
			}
			if elapsed > 50*time.Millisecond {
				t.Logf("slow: %v (budget 50 ms; timing is informational under -race)", elapsed)
			}
		})
	}
}
