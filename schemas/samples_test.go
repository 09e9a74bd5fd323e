package schemas

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The sample documents live in testdata/valid/<stem>/ (each must validate
// against <stem>.xsd) and testdata/invalid/<stem>/ (each must be rejected by
// it, while still being well-formed XML). Validation itself needs libxml2 and
// is checked by the xmlpipe layer's test and, where xmllint is installed, by
// TestSamplesAgainstXmllint; these tests check the pure-Go properties.

// minInvalidSamples is the smallest acceptable number of invalid samples per
// schema.
const minInvalidSamples = 5

// sampleDoc is what the tests read from one sample file.
type sampleDoc struct {
	path        string
	root        xml.Name
	leadComment string            // text of a comment before the root, if any
	elements    map[xml.Name]bool // every element name used
	attributes  map[string]bool   // every unqualified attribute name used
	texts       map[string]bool   // every trimmed, non-empty text value
}

// stem returns the schema file name without its .xsd suffix.
func stem(name string) string { return strings.TrimSuffix(name, ".xsd") }

// readSamples parses every sample of kind ("valid" or "invalid") for the
// schema name; it fails the test on a malformed file.
func readSamples(t *testing.T, kind, name string) []sampleDoc {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", kind, stem(name), "*.xml"))
	if err != nil {
		t.Fatal(err)
	}
	docs := make([]sampleDoc, 0, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := wellFormed(b); err != nil {
			t.Errorf("%s: not well-formed: %v", p, err)
			continue
		}
		doc, err := readSample(b)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		doc.path = p
		docs = append(docs, doc)
	}
	return docs
}

// readSample collects the names and values a sample uses.
func readSample(b []byte) (sampleDoc, error) {
	doc := sampleDoc{
		elements:   map[xml.Name]bool{},
		attributes: map[string]bool{},
		texts:      map[string]bool{},
	}
	dec := xml.NewDecoder(bytes.NewReader(b))
	seenRoot := false
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return doc, nil
		}
		if err != nil {
			return doc, err
		}
		switch v := tok.(type) {
		case xml.Comment:
			if !seenRoot && doc.leadComment == "" {
				doc.leadComment = strings.TrimSpace(string(v))
			}
		case xml.StartElement:
			if !seenRoot {
				seenRoot = true
				doc.root = v.Name
			}
			doc.elements[v.Name] = true
			for _, a := range v.Attr {
				if a.Name.Space == "" && a.Name.Local != "xmlns" {
					doc.attributes[a.Name.Local] = true
				}
			}
		case xml.CharData:
			if s := strings.TrimSpace(string(v)); s != "" {
				doc.texts[s] = true
			}
		}
	}
}

func TestSampleDirectoriesMatchSchemas(t *testing.T) {
	for _, kind := range []string{"valid", "invalid"} {
		dirs, err := os.ReadDir(filepath.Join("testdata", kind))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range dirs {
			if _, ok := Fixed(d.Name() + ".xsd"); !ok || !d.IsDir() {
				t.Errorf("testdata/%s/%s does not name a fixed schema", kind, d.Name())
			}
		}
	}
}

func TestInvalidSamplesAreWellFormedAndExplained(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			docs := readSamples(t, "invalid", name)
			if len(docs) < minInvalidSamples {
				t.Fatalf("%d invalid samples, want at least %d", len(docs), minInvalidSamples)
			}
			for _, d := range docs {
				if !strings.HasPrefix(d.leadComment, "invalid: ") {
					t.Errorf("%s: want a leading <!-- invalid: reason --> comment, got %q", d.path, d.leadComment)
				}
			}
		})
	}
}

// TestValidSamplesCoverEveryRoot checks that every global element of every
// schema has at least one valid sample, and that every valid sample's root
// is a global element of its schema.
func TestValidSamplesCoverEveryRoot(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			d := mustDecls(t, name)
			docs := readSamples(t, "valid", name)
			roots := map[xml.Name]bool{}
			for _, doc := range docs {
				roots[doc.root] = true
			}
			globals := map[xml.Name]bool{}
			for _, g := range d.globalElements {
				n := xml.Name{Space: d.targetNS, Local: g}
				globals[n] = true
				if !roots[n] {
					t.Errorf("no valid sample with root {%s}%s", n.Space, n.Local)
				}
			}
			for _, doc := range docs {
				if !globals[doc.root] {
					t.Errorf("%s: root {%s}%s is not a global element of %s", doc.path, doc.root.Space, doc.root.Local, name)
				}
			}
		})
	}
}

// TestValidSamplesCoverEveryDeclaration checks that the valid samples use
// every declared element (in the target namespace), every declared attribute
// and every enumeration value at least once, so a validator test over them
// exercises the whole schema.
func TestValidSamplesCoverEveryDeclaration(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			d := mustDecls(t, name)
			elements := map[xml.Name]bool{}
			attributes := map[string]bool{}
			texts := map[string]bool{}
			for _, doc := range readSamples(t, "valid", name) {
				for k := range doc.elements {
					elements[k] = true
				}
				for k := range doc.attributes {
					attributes[k] = true
				}
				for k := range doc.texts {
					texts[k] = true
				}
			}
			for _, e := range d.elements {
				if !elements[xml.Name{Space: d.targetNS, Local: e}] {
					t.Errorf("element %q is used by no valid sample", e)
				}
			}
			for _, a := range d.attributes {
				if !attributes[a] {
					t.Errorf("attribute %q is used by no valid sample", a)
				}
			}
			for _, v := range d.enumerations {
				if !texts[v] {
					t.Errorf("enumeration value %q is used by no valid sample", v)
				}
			}
		})
	}
}

// TestPrivilegedSamplesCoverEveryOperation names the request operations,
// response results and push events explicitly, so a schema change that drops
// one is caught even if a sample still uses the name elsewhere.
func TestPrivilegedSamplesCoverEveryOperation(t *testing.T) {
	wantChildren := map[string][]string{
		"privileged-msg": {
			"shutdown", "register-listener", "unregister-listener", "list-listeners",
			"get-listener-schema", "inject-message", "get-thread-history", "subscribe-thread",
			"unsubscribe", "get-organism-graph", "get-status", "set-config", "get-config",
			"register-remote-gateway", "unregister-remote-gateway",
		},
		"privileged-response": {
			"ack", "error", "listeners", "listener-schema", "thread-created", "thread-history",
			"subscription", "organism-graph", "status", "config",
		},
		"privileged-push": {"thread-event", "listener-event", "system-event"},
	}
	got := map[string]map[string]bool{}
	for _, doc := range readSamples(t, "valid", "privileged-msg.xsd") {
		op, err := payloadChild(doc.path)
		if err != nil {
			t.Fatalf("%s: %v", doc.path, err)
		}
		if got[doc.root.Local] == nil {
			got[doc.root.Local] = map[string]bool{}
		}
		got[doc.root.Local][op] = true
	}
	for root, ops := range wantChildren {
		for _, op := range ops {
			if !got[root][op] {
				t.Errorf("no valid <%s> sample carrying <%s>", root, op)
			}
		}
	}
}

// payloadChild returns the local name of the first element inside the
// <payload> child of a privileged root.
func payloadChild(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	dec := xml.NewDecoder(bytes.NewReader(b))
	depth := 0
	inPayload := false
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", err
		}
		switch v := tok.(type) {
		case xml.StartElement:
			depth++
			if depth == 2 && v.Name.Local == "payload" {
				inPayload = true
			} else if depth == 3 && inPayload {
				return v.Name.Local, nil
			}
		case xml.EndElement:
			depth--
		}
	}
}
