package stage

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/schemas"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/internal/lx"
)

// TestFixedSchemasWithLibxml2 compiles every fixed schema through the lx layer
// (as the pump does at start) and checks the samples in schemas/testdata: every
// valid sample validates, every invalid one is rejected with diagnostics.
func TestFixedSchemasWithLibxml2(t *testing.T) {
	for _, name := range schemas.Names() {
		stem := strings.TrimSuffix(name, ".xsd")
		t.Run(stem, func(t *testing.T) {
			xsd, _ := schemas.Fixed(name)
			s, errs := lx.CompileSchema(xsd, "mem:/schemas/"+name)
			if s == nil {
				t.Fatalf("compile: %v", errs)
			}
			for _, kind := range []string{"valid", "invalid"} {
				files, _ := filepath.Glob(filepath.Join("../../schemas/testdata", kind, stem, "*.xml"))
				if len(files) == 0 {
					t.Fatalf("no %s samples for %s", kind, stem)
				}
				for _, f := range files {
					b, err := os.ReadFile(f)
					if err != nil {
						t.Fatal(err)
					}
					doc, perrs := lx.Parse(b, lx.OptNoNet)
					if doc == nil || perrs.Severe() {
						t.Fatalf("%s: not well-formed: %v", f, perrs)
					}
					verrs := s.Validate(doc)
					doc.Free()
					if kind == "valid" && verrs != nil {
						t.Errorf("%s rejected: %v", f, verrs)
					}
					if kind == "invalid" && verrs == nil {
						t.Errorf("%s accepted", f)
					}
				}
			}
		})
	}
}
