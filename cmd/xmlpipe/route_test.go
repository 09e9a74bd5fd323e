package main

import (
	"strings"
	"testing"
)

// repo is the repository root, where the README's commands run.
const repo = "../.."

// The README's worked example, run verbatim from the repository root:
// "I need to multiply six by seven" ranks calculate first, and --fill shows
// the payload it would send.
func TestRouteCommand(t *testing.T) {
	r := runBinary(t, repo, "", "route", "I need to multiply six by seven", "testdata/route/organism.yaml")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "RANK") || !strings.Contains(lines[1], " calculate ") {
		t.Fatalf("calculate is not ranked first:\n%s", r.stdout)
	}
	golden(t, "route-multiply", r.stdout)

	r = runBinary(t, repo, "", "route", "--fill", "I need to multiply six by seven", "testdata/route/organism.yaml")
	if r.code != 0 || !strings.Contains(r.stdout, "payload for calculate (filled by extractive):\n<Calculate xmlns=\"\"><Expression>6*7</Expression></Calculate>\n") {
		t.Fatalf("--fill: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	golden(t, "route-multiply-fill", r.stdout)
}

// A file request finds files; ranked for the greeter, whose peers and tools
// leave files out, it never does.
func TestRouteCommandMasked(t *testing.T) {
	r := runBinary(t, repo, "", "route", "read the notes file", "testdata/route/organism.yaml")
	if r.code != 0 || !strings.Contains(strings.Split(r.stdout, "\n")[1], " files ") {
		t.Fatalf("unmasked: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, need := range []string{"read the notes file", "read notes/todo.txt", "delete the temp files", "list the files"} {
		r := runBinary(t, repo, "", "route", "--agent", "greeter", "--fill", need, "testdata/route/organism.yaml")
		if strings.Contains(r.stdout, " files ") || strings.Contains(r.stdout, "payload for files") {
			t.Errorf("%q, masked for the greeter, found files:\n%s", need, r.stdout)
		}
	}
	golden(t, "route-masked", runBinary(t, repo, "", "route", "--agent", "greeter", "read the notes file",
		"testdata/route/organism.yaml").stdout)
}

func TestRouteCommandErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"no profiles yet", []string{"route", "--profile", "researcher", "read the notes file", "testdata/route/organism.yaml"}, 1,
			`xmlpipe route: unknown profile "researcher": this organism defines no profiles (a profiles: section is needed)`},
		{"profile in another case", []string{"route", "--profile", "Calc", "x", "testdata/profiles/organism.yaml"}, 1,
			`xmlpipe route: unknown profile "Calc" (did you mean "calc"?)`},
		{"nothing matches in the shipped organism", []string{"route", "I need to multiply six by seven", "organism.yaml"}, 1,
			"xmlpipe route: no matching capability in your profile"},
		{"unknown agent", []string{"route", "--agent", "nobody", "x", "testdata/route/organism.yaml"}, 1, "--agent: unknown listener"},
		{"agent typo", []string{"route", "--agent", "greetr", "x", "testdata/route/organism.yaml"}, 1,
			`xmlpipe route: --agent: unknown listener: greetr (did you mean "greeter"?)`},
		{"empty need", []string{"route", "  ", "testdata/route/organism.yaml"}, 2,
			"xmlpipe route: describe what you need (the need is the first argument)"},
		{"fill gives up", []string{"route", "--fill", "read the notes file", "testdata/route/organism.yaml"}, 1,
			"--fill: cannot fill the payload for files: extractive: cannot fill Path"},
		{"need too long", []string{"route", strings.Repeat("read the notes file ", 1000), "testdata/route/organism.yaml"}, 1,
			"xmlpipe route: the need is too long: describe it in a few sentences (20000 bytes, at most 16384)"},
		{"no need", []string{"route"}, 2, "usage: xmlpipe route"},
		{"bad limit", []string{"route", "--limit", "0", "x"}, 2, "--limit must be positive"},
		{"bad config", []string{"route", "x", "cmd/xmlpipe/testdata/bad-key.yaml"}, 1, "bad-key.yaml:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runBinary(t, repo, "", tc.args...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.stderr) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", r.code, r.stderr, tc.code, tc.stderr)
			}
		})
	}
}
