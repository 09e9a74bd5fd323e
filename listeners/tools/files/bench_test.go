package files

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/listeners/tools"
)

// bigRoot makes a root of n empty files (in directories of 1000).
func bigRoot(b *testing.B, n int) string {
	b.Helper()
	root := b.TempDir()
	for i := range n {
		sub := filepath.Join(root, "d"+strconv.Itoa(i/1000))
		if i%1000 == 0 {
			if err := os.Mkdir(sub, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		f, err := os.Create(filepath.Join(sub, strconv.Itoa(i)))
		if err != nil {
			b.Fatal(err)
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
	}
	return root
}

// BenchmarkWriteBigRoot: writes to a root of 100,000 files, in the
// steady state (the root counted once): overwriting a file, writing a new
// one and deleting it, and a write the quota refuses.
func BenchmarkWriteBigRoot(b *testing.B) {
	root := bigRoot(b, 100_000)
	content := strings.Repeat("x", 1000)
	tool := &Tool{Policy: tools.Fixed(tools.Config{AllowedPaths: []string{root}, MaxDiskBytes: 1 << 30})}
	full := &Tool{Policy: tools.Fixed(tools.Config{AllowedPaths: []string{root}, MaxDiskBytes: 1 << 20})}
	benches := []struct {
		name string
		tool *Tool
		ops  []Files
		want string // the last op's error
	}{
		{"overwrite", tool, []Files{{Op: "write", Path: "a", Content: content}}, ""},
		{"write+delete", tool, []Files{{Op: "write", Path: "b", Content: content}, {Op: "delete", Path: "b"}}, ""},
		{"refused", full, []Files{{Op: "write", Path: "c", Content: content}}, ErrDiskQuota.Error()},
	}
	b.Run("overwrite-during-refusals", func(b *testing.B) {
		// Another caller's writes are refused meanwhile, each counting the
		// root first: an overwrite waits for none of those counts.
		over := Files{Op: "write", Path: "d", Content: content}
		callTool(b, full, over)
		stop, done := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			for {
				select {
				case <-stop:
					return
				default:
					callTool(b, full, over)
				}
			}
		}()
		defer func() { close(stop); <-done }()
		p := Files{Op: "write", Path: "a", Content: content}
		for b.Loop() {
			if r := callTool(b, tool, p); r.Error != "" {
				b.Fatalf("%+v", r)
			}
		}
	})
	for _, bc := range benches {
		b.Run(bc.name, func(b *testing.B) {
			for _, p := range bc.ops { // the first write counts the root
				callTool(b, bc.tool, p)
			}
			b.ResetTimer()
			for b.Loop() {
				var r *FilesResult
				for _, p := range bc.ops {
					r = callTool(b, bc.tool, p)
				}
				if !strings.Contains(r.Error, bc.want) || (bc.want == "" && r.Error != "") {
					b.Fatalf("%+v, want error %q", r, bc.want)
				}
			}
		})
	}
}
