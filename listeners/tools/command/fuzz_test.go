package command

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/listeners/tools"
)

// FuzzArguments checks the allow-list on arbitrary commands and arguments
// (nothing runs): every accepted argument is a declared literal, a {text}
// that is neither an option nor a path, an {int}, or a real path inside a
// root and outside the data directory.
func FuzzArguments(f *testing.F) {
	base := f.TempDir()
	notes, data, outside := filepath.Join(base, "notes"), filepath.Join(base, "data"), filepath.Join(base, "outside")
	for _, d := range []string{notes, data, outside, filepath.Join(notes, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			f.Fatal(err)
		}
	}
	for _, p := range []string{filepath.Join(notes, "a.txt"), filepath.Join(outside, "s"), filepath.Join(data, "k")} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	for link, target := range map[string]string{"out": outside, "data": data, "in": "a.txt", "up": ".."} {
		if err := os.Symlink(target, filepath.Join(notes, link)); err != nil {
			f.Fatal(err)
		}
	}
	c := tools.Config{AllowedPaths: []string{notes}, DataDir: data, AllowedCommands: []tools.Command{
		{Name: "cat"}, {Name: "wc", Args: []string{"-l", "{file}", "--in={file}", "{dir}", "+{text}", "n={int}", "{text}"}},
	}}
	for _, s := range [][3]string{{"wc", "-l", "notes/a.txt"}, {"wc", "--in=out/s", "+%Y"}, {"wc", "../outside/s", "n=12"},
		{"cat", "", ""}, {"wc", "notes/up/data/k", "sub"}, {"wc", "-f", "/etc/shadow"}, {"wc", "--in=in", ".."}} {
		f.Add(s[0], s[1], s[2])
	}
	realNotes, err := filepath.EvalSymlinks(notes)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, cmd, a1, a2 string) {
		_, argv, err := resolve(c, cmd, []string{a1, a2})
		if err != nil {
			return
		}
		for i, a := range argv {
			in := []string{a1, a2}[i]
			switch {
			case a == in && (a == "-l" || strings.HasPrefix(a, "n=") || strings.HasPrefix(a, "+") ||
				(a != "" && a != "." && a != ".." && !strings.HasPrefix(a, "-") && !strings.Contains(a, "/"))):
			default:
				p := strings.TrimPrefix(a, "--in=")
				if !filepath.IsAbs(p) || !within(realNotes, p) || within(data, p) {
					t.Fatalf("%s %q %q: argument %d became %q", cmd, a1, a2, i, a)
				}
			}
		}
	})
}

// within reports whether p is dir or inside it.
func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
