package schemas

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// xsNS is the XML Schema namespace.
const xsNS = "http://www.w3.org/2001/XMLSchema"

// wantNames is the documented order of Names.
var wantNames = []string{
	"envelope.xsd",
	"core.xsd",
	"system-error.xsd",
	"refusal.xsd",
	"system-msg.xsd",
	"privileged-msg.xsd",
	"meta.xsd",
}

func TestNames(t *testing.T) {
	got := Names()
	if diff := cmp.Diff(wantNames, got); diff != "" {
		t.Fatalf("Names() mismatch (-want +got):\n%s", diff)
	}
	got[0] = "changed.xsd"
	if diff := cmp.Diff(wantNames, Names()); diff != "" {
		t.Fatalf("Names() shares its backing array with callers (-want +got):\n%s", diff)
	}
}

func TestFixedMatchesFilesOnDisk(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			got, ok := Fixed(name)
			if !ok {
				t.Fatalf("Fixed(%q) ok = false, want true", name)
			}
			want, err := os.ReadFile(name)
			if err != nil {
				t.Fatalf("read %s: %v", name, err)
			}
			if len(got) == 0 {
				t.Fatalf("Fixed(%q) is empty", name)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Fatalf("Fixed(%q) differs from the file (-file +embedded):\n%s", name, diff)
			}
		})
	}
}

func TestAccessorsAgreeWithFixed(t *testing.T) {
	accessors := []struct {
		name string
		get  func() []byte
	}{
		{"envelope.xsd", Envelope},
		{"core.xsd", Core},
		{"system-error.xsd", SystemError},
		{"refusal.xsd", Refusal},
		{"system-msg.xsd", System},
		{"privileged-msg.xsd", Privileged},
		{"meta.xsd", Meta},
	}
	var covered []string
	for _, a := range accessors {
		covered = append(covered, a.name)
		t.Run(a.name, func(t *testing.T) {
			want, ok := Fixed(a.name)
			if !ok {
				t.Fatalf("Fixed(%q) ok = false", a.name)
			}
			if diff := cmp.Diff(string(want), string(a.get())); diff != "" {
				t.Fatalf("accessor differs from Fixed (-Fixed +accessor):\n%s", diff)
			}
		})
	}
	if diff := cmp.Diff(Names(), covered); diff != "" {
		t.Fatalf("accessor table does not cover Names() (-Names +accessors):\n%s", diff)
	}
}

func TestFixedUnknownNames(t *testing.T) {
	for _, name := range []string{"", "nope.xsd", "ENVELOPE.xsd", "envelope", "./envelope.xsd", "../schemas/envelope.xsd", "hello/v1.xsd"} {
		t.Run(name, func(t *testing.T) {
			b, ok := Fixed(name)
			if ok || b != nil {
				t.Fatalf("Fixed(%q) = %d bytes, %v; want nil, false", name, len(b), ok)
			}
		})
	}
}

func TestAccessorsReturnCopies(t *testing.T) {
	first := Envelope()
	want := string(first)
	first[0] = 'X'
	if got := string(Envelope()); got != want {
		t.Fatal("Envelope() returned bytes shared with a previous caller")
	}
	b, _ := Fixed("meta.xsd")
	wantMeta := string(b)
	b[0] = 'X'
	if again, _ := Fixed("meta.xsd"); string(again) != wantMeta {
		t.Fatal("Fixed() returned bytes shared with a previous caller")
	}
}

// TestEveryTopLevelSchemaIsEmbedded keeps the embed list and the directory in
// step: a new fixed schema must be added to Names, and every name must exist.
func TestEveryTopLevelSchemaIsEmbedded(t *testing.T) {
	onDisk, err := filepath.Glob("*.xsd")
	if err != nil {
		t.Fatal(err)
	}
	names := Names()
	slices.Sort(onDisk)
	slices.Sort(names)
	if diff := cmp.Diff(onDisk, names); diff != "" {
		t.Fatalf("*.xsd on disk vs Names() (-disk +Names):\n%s", diff)
	}
}

func TestSchemasAreWellFormedXSD(t *testing.T) {
	tests := []struct {
		name string
		tns  string
	}{
		{"envelope.xsd", EnvelopeNS},
		{"core.xsd", CoreNS},
		{"system-error.xsd", ""},
		{"refusal.xsd", CoreNS},
		{"system-msg.xsd", SystemNS},
		{"privileged-msg.xsd", PrivilegedNS},
		{"meta.xsd", MetaNS},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, _ := Fixed(tt.name)
			if err := wellFormed(b); err != nil {
				t.Fatalf("not well-formed: %v", err)
			}
			d := mustDecls(t, tt.name)
			if d.targetNS != tt.tns {
				t.Errorf("targetNamespace = %q, want %q", d.targetNS, tt.tns)
			}
			if d.elementFormDefault != "qualified" {
				t.Errorf("elementFormDefault = %q, want qualified", d.elementFormDefault)
			}
		})
	}
}

// TestGlobalElements pins the root vocabulary of every schema.
func TestGlobalElements(t *testing.T) {
	want := map[string][]string{
		"envelope.xsd":     {"message"},
		"core.xsd":         {"huh"},
		"system-error.xsd": {"SystemError"},
		"refusal.xsd":      {"refusal"},
		"system-msg.xsd": {
			"boot", "shutdown-signal", "huh", "heartbeat", "listener-joined", "listener-left",
		},
		"privileged-msg.xsd": {"privileged-msg", "privileged-response", "privileged-push"},
		"meta.xsd": {
			"request-schema", "request-example", "request-prompt", "list-capabilities",
			"schema-response", "example-response", "prompt-response", "capabilities",
		},
	}
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(want[name], mustDecls(t, name).globalElements); diff != "" {
				t.Fatalf("global elements (-want +got):\n%s", diff)
			}
		})
	}
}

// wellFormed reports whether b is one well-formed XML document.
func wellFormed(b []byte) error {
	dec := xml.NewDecoder(bytes.NewReader(b))
	roots := 0
	depth := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		switch tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				roots++
			}
			depth++
		case xml.EndElement:
			depth--
		}
	}
	if roots != 1 {
		return errors.New("want exactly one root element")
	}
	return nil
}
