package files

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/listeners/tools"
)

// TestAppendStaysWithinMaxBytes: each append was checked alone, so
// repeated appends grew a file past max_bytes (one the tool then refused
// to read, and without end the disk). An append whose result would pass
// max_bytes is refused, nothing written, also when appends race.
func TestAppendStaysWithinMaxBytes(t *testing.T) {
	root := t.TempDir()
	c := tools.Config{AllowedPaths: []string{root}, MaxBytes: 10}
	shown := filepath.Base(root) + "/log.txt" // errors name the root, never its host path
	steps := []struct {
		content string
		wantErr string
	}{
		{"1234", ""},
		{"5678", ""},
		{"9ab", "files: over the size cap: appending 3 bytes would make " + shown + " 11 bytes (max: 10)"},
		{"9a", ""},
		{"b", "files: over the size cap: appending 1 bytes would make " + shown + " 11 bytes (max: 10)"},
	}
	for i, s := range steps {
		r := call(t, c, Files{Op: "write", Path: "log.txt", Content: s.content, Append: true})
		if diff := cmp.Diff(s.wantErr, r.Error); diff != "" {
			t.Fatalf("append %d: error (-want +got):\n%s", i+1, diff)
		}
	}
	if r := call(t, c, Files{Op: "read", Path: "log.txt"}); r.Error != "" || r.Content != "123456789a" {
		t.Fatalf("read: %+v", r)
	}

	// Racing appends: together they would make 40 bytes; 10 fit.
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() { call(t, c, Files{Op: "write", Path: "race.txt", Content: fmt.Sprint(i % 10), Append: true}) })
	}
	wg.Wait()
	b, err := os.ReadFile(filepath.Join(root, "race.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 10 || strings.Trim(string(b), "0123456789") != "" {
		t.Fatalf("race.txt is %q (%d bytes), want 10 digits", b, len(b))
	}
}
