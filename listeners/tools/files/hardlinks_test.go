package files

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/listeners/tools"
)

// TestForeignHardLinksRefused: a hard link someone else made inside a root
// to a file outside it is neither read, written, appended to nor truncated
// through: a regular file with more than one hard link is refused after it
// is opened and before anything is done to it, as the WASM sandbox refuses
// it. The file outside keeps its content.
func TestForeignHardLinksRefused(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(secret, filepath.Join(root, "hl.txt")); err != nil {
		t.Skip("no hard links here:", err)
	}
	c := tools.Config{AllowedPaths: []string{root}, MaxBytes: 64}
	tests := []Files{
		{Op: "read", Path: "hl.txt"},
		{Op: "write", Path: "hl.txt", Content: "overwritten"},
		{Op: "write", Path: "hl.txt", Content: "appended", Append: true},
	}
	for _, p := range tests {
		r := call(t, c, p)
		if !strings.Contains(r.Error, ErrHardLinked.Error()) || r.Content != "" || r.BytesWritten != 0 {
			t.Errorf("%s (append %v) through the hard link: %+v, want %q", p.Op, p.Append, r, ErrHardLinked)
		}
		if strings.Contains(r.Error, outside) {
			t.Errorf("%s: the error shows a host path: %s", p.Op, r.Error)
		}
	}
	if b, err := os.ReadFile(secret); err != nil || string(b) != "secret" {
		t.Errorf("the file outside: %q, %v", b, err)
	}
	// A file of one link is read and written as before.
	if r := call(t, c, Files{Op: "write", Path: "mine.txt", Content: "mine"}); r.Error != "" {
		t.Fatalf("write mine: %+v", r)
	}
	if r := call(t, c, Files{Op: "write", Path: "mine.txt", Content: "mine"}); r.Error != "" {
		t.Fatalf("rewrite mine: %+v", r)
	}
	if r := call(t, c, Files{Op: "read", Path: "mine.txt"}); r.Error != "" || r.Content != "mine" {
		t.Fatalf("read mine: %+v", r)
	}
	// A listing names it without the outside file's size: "other", as a
	// symbolic link or a FIFO, neither of which is read either.
	r := call(t, c, Files{Op: "list", Path: "."})
	for _, e := range r.Entries {
		if e.Name == "hl.txt" && (e.Type != "other" || e.Size != 0) {
			t.Errorf("listed: %+v, want type other and no size (the file outside holds %d bytes)", e, len("secret"))
		}
	}
	// Deleting the link removes the name only, and is allowed.
	if r := call(t, c, Files{Op: "delete", Path: "hl.txt"}); r.Error != "" {
		t.Fatalf("delete the link: %+v", r)
	}
	if b, err := os.ReadFile(secret); err != nil || string(b) != "secret" {
		t.Errorf("the file outside after the link's removal: %q, %v", b, err)
	}
}
