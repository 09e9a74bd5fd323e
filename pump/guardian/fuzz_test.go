package guardian

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseDocument feeds arbitrary bytes to the constitution document
// parser: it never panics, every error is located in the document and wraps
// ErrDocument, and a parsed document is usable (every rule compiled, ids
// unique, a known action and severity).
func FuzzParseDocument(f *testing.F) {
	paths, _ := filepath.Glob("../../testdata/governance/*.md")
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(good))
	f.Add([]byte("---\n---\n"))
	f.Add([]byte("---\nrules: &a [*a]\n---\n"))
	f.Add([]byte("---\ndocument_type: constitution\nversion: 1\nscope: all_agents\nauthority_level: x\nrules:\n  - id: a\n    deny: '(a+)+$'\n    reason: r\n---\nbody"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Parse("f.md", data)
		if err != nil {
			if !errors.Is(err, ErrDocument) || !strings.HasPrefix(err.Error(), "f.md") {
				t.Fatalf("unlocated error %v", err)
			}
			return
		}
		ids := map[string]bool{}
		for _, r := range d.Rules {
			if r.re == nil || r.ID == "" || ids[r.ID] || (r.Action != Deny && r.Action != Review) || r.Reason == "" {
				t.Fatalf("bad rule %+v", r)
			}
			ids[r.ID] = true
			r.Matches(string(data))
		}
		g, err := New([]*Document{d}, []string{d.Scope})
		if err != nil {
			t.Fatalf("New over a parsed document: %v", err)
		}
		g.Check(Subject{From: "a", FromAgent: true, To: d.Scope, ToAgent: true, Payload: data})
		g.Constitution(d.Scope, "builtin")
	})
}
