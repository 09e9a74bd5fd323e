package tools

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestLocate(t *testing.T) {
	roots, err := Roots([]string{"/srv/notes", "/srv/docs"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, root, rel, err string
	}{
		{"notes/hello.txt", "notes", "hello.txt", ""},
		{"notes", "notes", ".", ""},
		{"notes/", "notes", ".", ""},
		{"./notes/a/../b", "notes", "b", ""},
		{"docs/a.txt", "docs", "a.txt", ""},
		{"docs/../notes/x", "notes", "x", ""},
		{"hello.txt", "notes", "hello.txt", ""},
		{"", "notes", ".", ""},
		{".", "notes", ".", ""},
		{"sub/docs/x", "notes", "sub/docs/x", ""},
		{"Docs/x", "notes", "Docs/x", ""}, // names are case-sensitive
		{"/srv/docs/a.txt", "docs", "a.txt", ""},
		{"/srv/docs", "docs", ".", ""},
		{"/srv/notes/../docs/a", "docs", "a", ""},
		{"..", "", "", "outside"},
		{"../etc/passwd", "", "", "outside"},
		{"notes/../../etc", "", "", "outside"},
		{"/etc/passwd", "", "", "outside"},
		{"/srv/notesx/a", "", "", "outside"},
		{"hello.txt\x00../../etc/passwd", "", "", "NUL"},
		{"/srv/notes/a\x00", "", "", "NUL"},
	} {
		r, rel, err := Locate(roots, tc.path)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %v %q %v, want error %q", tc.path, r, rel, err, tc.err)
			}
			continue
		}
		if err != nil || r.Name != tc.root || rel != tc.rel {
			t.Errorf("%q: %s %q %v, want %s %q", tc.path, r.Name, rel, err, tc.root, tc.rel)
		}
		if got := r.Display(rel); !strings.HasPrefix(got, tc.root) || strings.Contains(got, "/srv") {
			t.Errorf("%q: shown as %q", tc.path, got)
		}
	}
	if _, _, err := Locate(nil, "a"); err != ErrNoRoots {
		t.Fatalf("no roots: %v", err)
	}
	for _, bad := range [][]string{{"/a/x", "/b/x"}, {"/"}, {}} {
		if _, err := Roots(bad); err == nil {
			t.Errorf("Roots(%q) accepted", bad)
		}
	}
}

// FuzzLocate: whatever the path, Locate names one of the roots and a clean
// relative path that stays inside it.
func FuzzLocate(f *testing.F) {
	for _, s := range []string{"notes/a", "../x", "/srv/docs/a", "docs/../../x", "a/./b//c", "", "/", "notes/..", "\x00"} {
		f.Add(s)
	}
	roots, err := Roots([]string{"/srv/notes", "/srv/docs"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, path string) {
		r, rel, err := Locate(roots, path)
		if err != nil {
			return
		}
		if r != roots[0] && r != roots[1] {
			t.Fatalf("%q: root %+v", path, r)
		}
		if rel != filepath.Clean(rel) || filepath.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, "../") {
			t.Fatalf("%q: rel %q", path, rel)
		}
		if !within(filepath.Join(r.Dir, rel), r.Dir) {
			t.Fatalf("%q: %s leaves %s", path, filepath.Join(r.Dir, rel), r.Dir)
		}
	})
}
