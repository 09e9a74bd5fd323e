package schemas

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSamplesAgainstXmllint validates every sample with the xmllint tool
// (libxml2-utils) when it is installed: each schema must compile, every
// valid sample must validate and every invalid one must fail validation. It
// is skipped where xmllint is missing; the libxml2 layer's own test covers
// the same samples in-process.
func TestSamplesAgainstXmllint(t *testing.T) {
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		t.Skip("xmllint not installed (apt-get install libxml2-utils)")
	}
	for _, name := range Names() {
		for _, kind := range []string{"valid", "invalid"} {
			t.Run(stem(name)+"/"+kind, func(t *testing.T) {
				files, err := filepath.Glob(filepath.Join("testdata", kind, stem(name), "*.xml"))
				if err != nil {
					t.Fatal(err)
				}
				if len(files) == 0 {
					t.Fatalf("no %s samples for %s", kind, name)
				}
				args := append([]string{"--noout", "--nonet", "--schema", name}, files...)
				var stderr bytes.Buffer
				cmd := exec.CommandContext(t.Context(), xmllint, args...)
				cmd.Stderr = &stderr
				runErr := cmd.Run()
				out := stderr.String()
				if strings.Contains(out, "failed to compile") {
					t.Fatalf("%s does not compile:\n%s", name, out)
				}
				want := " validates"
				if kind == "invalid" {
					want = " fails to validate"
				}
				for _, f := range files {
					if !hasLine(out, f+want) {
						t.Errorf("%s: want %q; xmllint said:\n%s", f, strings.TrimSpace(want), linesAbout(out, f))
					}
				}
				if kind == "valid" && runErr != nil {
					t.Errorf("xmllint exit: %v", runErr)
				}
			})
		}
	}
}

// hasLine reports whether out contains line as a whole line.
func hasLine(out, line string) bool {
	for l := range strings.Lines(out) {
		if strings.TrimRight(l, "\n") == line {
			return true
		}
	}
	return false
}

// linesAbout returns the lines of out that mention file.
func linesAbout(out, file string) string {
	var b strings.Builder
	for l := range strings.Lines(out) {
		if strings.Contains(l, file) {
			b.WriteString(l)
		}
	}
	return b.String()
}
