package command

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/listeners/diskquota"
	"github.com/xml-pipeline/xmlpipe/listeners/tools"
	"github.com/xml-pipeline/xmlpipe/listeners/tools/files"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestOutputIntoARootIsCounted: what a program writes into one of its
// allowed_paths is counted before the next files write there, so the files
// tool's disk quota holds after it: a write that the root, with the
// program's output, has no room for is refused.
func TestOutputIntoARootIsCounted(t *testing.T) {
	const q = 8 * diskquota.BlockBytes
	notes := filepath.Join(t.TempDir(), "notes")
	if err := os.Mkdir(notes, 0o755); err != nil {
		t.Fatal(err)
	}
	openDirs(t, notes)
	out := filepath.Join(notes, "out")
	if err := os.WriteFile(out, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(out, 0o666); err != nil { // past the umask: the program's user writes it
		t.Fatal(err)
	}
	ft := &files.Tool{Policy: tools.Fixed(tools.Config{AllowedPaths: []string{notes}, MaxDiskBytes: q})}
	write := func(path string, n int) string {
		t.Helper()
		resp, err := ft.Handle(context.Background(), &files.Files{Op: "write", Path: path, Content: strings.Repeat("x", n)},
			xmlpipe.Metadata{From: "agent"})
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*xmlpipe.RespondResponse).Payload.(*files.FilesResult).Error
	}
	if e := write("a", 1000); e != "" { // the root is counted: a and out
		t.Fatalf("write a: %s", e)
	}
	c := tools.Config{AllowedPaths: []string{notes}, RunAs: runAs(),
		AllowedCommands: []tools.Command{{Name: "tee", Args: []string{"{file}"}}}}
	if r := call(t, c, RunCommand{Command: "tee", Args: []string{"notes/out"}, Stdin: strings.Repeat("y", 6000)}); r.Error != "" || r.ExitCode != 0 {
		t.Fatalf("tee: %+v", r)
	}
	// Without the program's 6000 bytes (two blocks), four blocks more
	// (and b's name) would fit.
	if e := write("b", 4*diskquota.BlockBytes); !strings.Contains(e, files.ErrDiskQuota.Error()) {
		t.Errorf("write b after the program's output: %q, want %q", e, files.ErrDiskQuota)
	}
	if used, err := diskquota.Count(notes); err != nil || used > q {
		t.Errorf("the root holds %d bytes (%v), over the %d-byte quota", used, err, q)
	}
}
