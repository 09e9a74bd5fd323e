package command

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/listeners/tools"
)

// TestFileArgumentHardLinkRefused: {file} names a file inside a root, but
// a hard link someone else made there is the file outside itself — a
// program given it would read (or, for a program that writes its
// argument, change) that file: refused before anything runs, as the files
// tool refuses it.
func TestFileArgumentHardLinkRefused(t *testing.T) {
	base := t.TempDir()
	notes, outside := filepath.Join(base, "notes"), filepath.Join(base, "outside")
	for _, d := range []string{notes, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(notes, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(outside, "secret.txt"), filepath.Join(notes, "hl.txt")); err != nil {
		t.Skip("no hard links here:", err)
	}
	c := tools.Config{AllowedPaths: []string{notes}, AllowedCommands: []tools.Command{{Name: "wc", Args: []string{"-l", "{file}"}}}}
	_, args, err := resolve(c, "wc", []string{"-l", "notes/hl.txt"})
	if !errors.Is(err, ErrArgument) || !strings.Contains(err.Error(), "hard link") {
		t.Fatalf("wc -l notes/hl.txt: args %q, err %v; want ErrArgument naming the hard link", args, err)
	}
	if strings.Contains(err.Error(), outside) {
		t.Errorf("the refusal shows a host path: %v", err)
	}
	if _, args, err := resolve(c, "wc", []string{"-l", "notes/a.txt"}); err != nil || len(args) != 2 {
		t.Fatalf("wc -l notes/a.txt: %q, %v", args, err)
	}
}
