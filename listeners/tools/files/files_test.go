package files

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/listeners/tools"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

func call(t *testing.T, c tools.Config, p Files) *FilesResult {
	t.Helper()
	resp, err := (&Tool{Policy: tools.Fixed(c)}).Handle(context.Background(), &p, xmlpipe.Metadata{From: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	return resp.(*xmlpipe.RespondResponse).Payload.(*FilesResult)
}

func TestFiles(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "linkdir")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "bin.dat"), []byte{0, 1, 2, 0xff}, 0o600); err != nil {
		t.Fatal(err)
	}
	c := tools.Config{AllowedPaths: []string{root}, MaxBytes: 64}

	// Happy paths.
	if r := call(t, c, Files{Op: "write", Path: filepath.Join(root, "a.txt"), Content: "hello"}); r.Error != "" || r.BytesWritten != 5 {
		t.Fatalf("write: %+v", r)
	}
	if r := call(t, c, Files{Op: "write", Path: "a.txt", Content: " world", Append: true}); r.Error != "" {
		t.Fatalf("append: %+v", r)
	}
	if r := call(t, c, Files{Op: "read", Path: "a.txt"}); r.Error != "" || r.Content != "hello world" || r.Size != 11 {
		t.Fatalf("read: %+v", r)
	}
	if err := os.MkdirAll(filepath.Join(root, "sub", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	if r := call(t, c, Files{Op: "write", Path: "sub/deep/b.txt", Content: "b"}); r.Error != "" {
		t.Fatalf("write sub: %+v", r)
	}
	r := call(t, c, Files{Op: "list", Path: root})
	var names []string
	for _, e := range r.Entries {
		names = append(names, e.Name+":"+e.Type)
	}
	if r.Error != "" || strings.Join(names, ",") != "a.txt:file,bin.dat:file,link.txt:other,linkdir:other,sub:dir" {
		t.Fatalf("list: %v %+v", names, r)
	}
	r = call(t, c, Files{Op: "list", Path: "sub", Recursive: true})
	if r.Error != "" || len(r.Entries) != 2 || r.Entries[1].Name != "deep/b.txt" {
		t.Fatalf("list recursive: %+v", r)
	}
	if r := call(t, c, Files{Op: "delete", Path: "sub", Recursive: true}); r.Error != "" {
		t.Fatalf("delete: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(root, "sub")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("sub still there: %v", err)
	}

	// Refusals.
	refusals := []struct {
		name string
		c    tools.Config
		p    Files
		want string
	}{
		{"no roots", tools.Config{}, Files{Op: "read", Path: "a.txt"}, "no roots configured"},
		{"absolute outside", c, Files{Op: "read", Path: filepath.Join(outside, "secret.txt")}, "outside the allowed roots"},
		{"dot-dot", c, Files{Op: "read", Path: "../" + filepath.Base(outside) + "/secret.txt"}, "outside the allowed roots"},
		{"dot-dot absolute", c, Files{Op: "read", Path: root + "/../" + filepath.Base(outside) + "/secret.txt"}, "outside the allowed roots"},
		{"symlink out", c, Files{Op: "read", Path: "link.txt"}, "escapes"},
		{"symlinked dir out", c, Files{Op: "read", Path: "linkdir/secret.txt"}, "escapes"},
		{"write through symlink", c, Files{Op: "write", Path: "linkdir/new.txt", Content: "x"}, "escapes"},
		{"too large read", tools.Config{AllowedPaths: []string{root}, MaxBytes: 4}, Files{Op: "read", Path: "a.txt"}, "over the size cap"},
		{"too large write", c, Files{Op: "write", Path: "big.txt", Content: strings.Repeat("x", 65)}, "over the size cap"},
		{"binary", c, Files{Op: "read", Path: "bin.dat"}, "not UTF-8 text"},
		{"read-only write", tools.Config{AllowedPaths: []string{root}, ReadOnly: true}, Files{Op: "write", Path: "a.txt", Content: "x"}, "read-only"},
		{"read-only delete", tools.Config{AllowedPaths: []string{root}, ReadOnly: true}, Files{Op: "delete", Path: "a.txt"}, "read-only"},
		{"delete root", c, Files{Op: "delete", Path: root, Recursive: true}, "refusing to delete a root"},
		{"missing", c, Files{Op: "read", Path: "nope.txt"}, "no such file"},
		{"bad op", c, Files{Op: "chmod", Path: "a.txt"}, "unknown op"},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, tc.c, tc.p)
			if !strings.Contains(r.Error, tc.want) {
				t.Fatalf("error %q, want %q", r.Error, tc.want)
			}
			if strings.Contains(r.Error, outside) || (tc.name != "absolute outside" && strings.Contains(r.Error, root)) {
				t.Fatalf("error leaks a host path: %q", r.Error)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(outside, "new.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a write escaped through the symlink")
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret.txt")); string(b) != "secret" {
		t.Fatal("outside file changed")
	}
}
