package main

import (
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// The test binary is built without VCS stamping (GOFLAGS=-buildvcs=false,
// as the Makefile sets) and without -ldflags: a development build.
func TestVersionOfADevelopmentBuild(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		r := runBinary(t, ".", "", args...)
		if r.code != 0 || r.stderr != "" {
			t.Fatalf("xmlpipe %v: exit %d, stderr %q", args, r.code, r.stderr)
		}
		lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
		want := []*regexp.Regexp{
			regexp.MustCompile(`^xmlpipe \(devel\)$`),
			regexp.MustCompile(`^commit   unknown \(built without VCS information: make build records it\)$`),
			regexp.MustCompile(`^go       ` + regexp.QuoteMeta(runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH) + `$`),
			regexp.MustCompile(`^libxml2  2\.\d+\.\d+(, built with 2\.\d+\.\d+)?$`),
		}
		if len(lines) != len(want) {
			t.Fatalf("xmlpipe %v printed %d lines, want %d:\n%s", args, len(lines), len(want), r.stdout)
		}
		for i, re := range want {
			if !re.MatchString(lines[i]) {
				t.Errorf("line %d = %q, want %s", i+1, lines[i], re)
			}
		}
	}
	if r := runBinary(t, ".", "", "version", "extra"); r.code != exitUsage {
		t.Errorf("version with an argument: exit %d, want 2", r.code)
	}
}

// What make build injects with -ldflags -X wins over the build information.
func TestVersionInjected(t *testing.T) {
	saved := [4]string{version, commit, commitTime, modified}
	t.Cleanup(func() { version, commit, commitTime, modified = saved[0], saved[1], saved[2], saved[3] })
	version, commit, commitTime, modified = "v1.2.3", "0123456789abcdef0123456789abcdef01234567", "2026-11-26T21:00:00Z", "true"
	r := runIn(t, "version")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{
		"xmlpipe v1.2.3\n",
		"commit   0123456789abcdef0123456789abcdef01234567 2026-11-26T21:00:00Z (modified)\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("version output lacks %q:\n%s", want, r.stdout)
		}
	}
	modified = ""
	if r := runIn(t, "version"); strings.Contains(r.stdout, "modified") {
		t.Errorf("a clean tree is reported modified:\n%s", r.stdout)
	}
}
