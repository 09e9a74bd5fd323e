package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"go.uber.org/goleak"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// binary is the xmlpipe binary built once by TestMain.
var binary string

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "xmlpipe-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "xmlpipe")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build xmlpipe:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	ignore := goleak.IgnoreCurrent()
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		// A goroutine a test started and left running fails the package.
		if err := goleak.Find(ignore); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// result is what one run of the binary produced.
type result struct {
	code           int
	stdout, stderr string
}

// runBinary runs the binary in dir with stdin and args. A crash (death by
// signal) fails the test.
func runBinary(t *testing.T, dir, stdin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatalf("xmlpipe %v: %v", args, err)
	}
	if cmd.ProcessState.ExitCode() < 0 {
		t.Fatalf("xmlpipe %v crashed: %v\nstderr:\n%s", args, cmd.ProcessState, errOut.String())
	}
	return result{cmd.ProcessState.ExitCode(), out.String(), errOut.String()}
}

// helloDir is a temporary directory holding the hello-world organism.yaml.
func helloDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "organism.yaml"), defaultOrganism, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func abs(t *testing.T, path string) string {
	t.Helper()
	p, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// golden compares got with testdata/<name>.golden (rewritten with -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run with -update to create it): %v", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}

func TestEmbeddedDefaultIsTheReference(t *testing.T) {
	want, err := os.ReadFile("../../organism.yaml")
	if err != nil {
		t.Skipf("no top-level organism.yaml: %v", err)
	}
	if diff := cmp.Diff(string(want), string(defaultOrganism)); diff != "" {
		t.Errorf("default-organism.yaml differs from the top-level organism.yaml (-top +embedded):\n%s", diff)
	}
}

func TestConsole(t *testing.T) {
	tests := []struct {
		name       string
		dir        string
		stdin      string
		args       []string
		code       int
		wantOut    []string
		wantErrOut string
	}{
		{"greeter", helloDir(t), "@greeter Dan\n/quit\n", []string{"console", "organism.yaml"}, 0,
			[]string{"organism hello-world", "[shouter] HELLO, DAN!\n"}, ""},
		{"embedded default at EOF", t.TempDir(), "@greeter Dan\n", []string{"console"}, 0,
			[]string{"organism hello-world", "no LLM backend is usable", "[shouter] HELLO, DAN!\n"}, ""},
		{"flags after the path", helloDir(t), "@greeter Bob\n", []string{"console", "organism.yaml", "--verbose"}, 0,
			[]string{"[sending to greeter]", "[shouter] HELLO, BOB!\n"}, ""},
		{"missing config", t.TempDir(), "", []string{"console", "nope.yaml"}, 1, nil, "nope.yaml"},
		{"too many arguments", t.TempDir(), "", []string{"console", "a.yaml", "b.yaml"}, 2, nil, "usage: xmlpipe console"},
		{"bad flag", t.TempDir(), "", []string{"console", "--colour"}, 2, nil, "flag provided but not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runBinary(t, tt.dir, tt.stdin, tt.args...)
			if r.code != tt.code {
				t.Fatalf("exit %d; want %d\nstdout:\n%s\nstderr:\n%s", r.code, tt.code, r.stdout, r.stderr)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, r.stdout)
				}
			}
			if !strings.Contains(r.stderr, tt.wantErrOut) {
				t.Errorf("stderr lacks %q:\n%s", tt.wantErrOut, r.stderr)
			}
		})
	}
}

func TestRunStopsOnSignal(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			// No users exist: --insecure-dev lets the bus start (on a free port).
			cmd := exec.Command(binary, "run", "--insecure-dev", "--listen", "127.0.0.1:0", "organism.yaml")
			cmd.Dir = helloDir(t)
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var log strings.Builder
			lines := bufio.NewScanner(stderr)
			for lines.Scan() {
				log.WriteString(lines.Text() + "\n")
				if strings.Contains(lines.Text(), "organism running") {
					break
				}
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			rest, _ := io.ReadAll(stderr)
			log.Write(rest)
			if err := cmd.Wait(); err != nil {
				t.Fatalf("run after %v: %v\n%s", sig, err, log.String())
			}
			for _, want := range []string{"organism=hello-world", "shutting down", "msg=stopped"} {
				if !strings.Contains(log.String(), want) {
					t.Errorf("log lacks %q:\n%s", want, log.String())
				}
			}
		})
	}
}

func TestValidate(t *testing.T) {
	r := runBinary(t, helloDir(t), "", "validate", "organism.yaml")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	golden(t, "validate-hello-world", r.stdout)

	tests := []struct {
		file  string
		lines []string
	}{
		{"bad-key.yaml", []string{`bad-key.yaml:3: organism: unknown key "colour"`, `bad-key.yaml:10: listeners[0].peers[0]`}},
		{"bad-listener.yaml", []string{`bad-listener.yaml:10: listener mystery: payload_class: unknown payload_class`}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			r := runBinary(t, ".", "", "validate", filepath.Join("testdata", tt.file))
			if r.code != 1 || r.stdout != "" {
				t.Fatalf("exit %d, stdout %q; want 1 and nothing", r.code, r.stdout)
			}
			for _, l := range tt.lines {
				if !strings.Contains(r.stderr, l) {
					t.Errorf("stderr lacks %q:\n%s", l, r.stderr)
				}
			}
		})
	}
}

func TestCheck(t *testing.T) {
	config := abs(t, "../../organism.yaml")
	envelope, err := os.ReadFile("../../testdata/c14n/08-envelope.xml")
	if err != nil {
		t.Fatal(err)
	}
	// The ingress parses without blank text nodes, so the accepted envelope
	// has none (unlike the plain C14N of the same file).
	canonical := `<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta><from>console</from><to>greeter</to>` +
		`<thread>6f1c2a8e-1d3b-4c5e-9f7a-0b1c2d3e4f50</thread></meta><Greeting xmlns=""><Name>Dan</Name></Greeting></message>`
	huhPayload := `<huh xmlns="https://xml-pipeline.org/ns/core/v1"><error>Invalid payload structure</error>`
	tests := []struct {
		name       string
		stdin      string
		args       []string
		code       int
		stdout     string // exact when wantPrefix is false
		wantPrefix bool
		stderr     []string
	}{
		{"envelope", "", []string{"check", "../../testdata/c14n/08-envelope.xml"}, 0, canonical + "\n", false, nil},
		{"stdin", string(envelope), []string{"check", "-"}, 0, canonical + "\n", false, nil},
		{"routed and decoded", "", []string{"check", "--config", config, "../../testdata/c14n/08-envelope.xml"}, 0,
			canonical + "\n", false, []string{"route: <Greeting> → greeter (payload valid and decoded)"}},
		{"by root tag, thread replaced", "", []string{"check", "testdata/by-root-tag.xml", "--config", config}, 0,
			`<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta><from>console</from><thread>`, true,
			[]string{"Invalid external thread ID 'not-a-uuid'", "route: <Greeting> → greeter"}},
		{"repaired", "", []string{"check", "testdata/repairable.xml"}, 0,
			`<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta><from>console</from><to>greeter</to><thread>6f1c2a8e-1d3b-4c5e-9f7a-0b1c2d3e4f50</thread></meta><Greeting xmlns=""><Name>Dan &amp; Bob</Name></Greeting></message>` + "\n",
			false, []string{"note: repair line 1: escaped bare '&'"}},
		{"invalid payload", "", []string{"check", "--config", config, "testdata/greeting-invalid.xml"}, 1, huhPayload, true,
			[]string{"error: payload: payload does not match the listener schema", "Element 'Nom': This element is not expected"}},
		{"invalid payload without config passes ingress", "", []string{"check", "testdata/greeting-invalid.xml"}, 0,
			"<message ", true, nil},
		{"no listener for the tag", "", []string{"check", "--config", config, "testdata/no-route.xml"}, 1, huhPayload, true,
			[]string{"route: no listener for <Farewell>"}},
		{"wrong target", "", []string{"check", "--config", config, "testdata/wrong-target.xml"}, 1, huhPayload, true,
			[]string{"shouter takes <GreetingResponse>, not <Greeting>"}},
		{"malformed", "<message><meta>", []string{"check", "-"}, 1,
			`<huh xmlns="https://xml-pipeline.org/ns/core/v1"><error>`, true, []string{"error: "}},
		{"privileged root is dropped", "", []string{"check", "../../testdata/hostile/privileged-root.xml"}, 1, "", false,
			[]string{"dropped (security event, the sender gets no <huh>)"}},
		{"missing file", "", []string{"check", "testdata/nope.xml"}, 1, "", false, []string{"nope.xml"}},
		{"bad config", "", []string{"check", "--config", "testdata/bad-key.yaml", "-"}, 1, "", false,
			[]string{"bad-key.yaml:3:"}},
		{"no file", "", []string{"check"}, 2, "", false, []string{"usage: xmlpipe check"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runBinary(t, ".", tt.stdin, tt.args...)
			if r.code != tt.code {
				t.Fatalf("exit %d; want %d\nstdout:\n%s\nstderr:\n%s", r.code, tt.code, r.stdout, r.stderr)
			}
			if tt.wantPrefix && !strings.HasPrefix(r.stdout, tt.stdout) {
				t.Errorf("stdout = %q; want prefix %q", r.stdout, tt.stdout)
			}
			if !tt.wantPrefix && r.stdout != tt.stdout {
				t.Errorf("stdout = %q; want %q", r.stdout, tt.stdout)
			}
			for _, w := range tt.stderr {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
		})
	}
}

// TestCheckHostile: every hostile input gets a <huh> or passes, and the
// process never crashes.
func TestCheckHostile(t *testing.T) {
	files, err := filepath.Glob("../../testdata/hostile/*")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Skip("no testdata/hostile inputs")
	}
	config := abs(t, "../../organism.yaml")
	for _, f := range files {
		for _, args := range [][]string{{"check", f}, {"check", "--config", config, f}} {
			t.Run(filepath.Base(f)+fmt.Sprint(len(args)), func(t *testing.T) {
				r := runBinary(t, ".", "", args...)
				switch {
				case r.code == 0 && strings.HasPrefix(r.stdout, "<message "):
				case r.code == 1 && strings.HasPrefix(r.stdout, "<huh ") && strings.Contains(r.stderr, "error: "):
				case r.code == 1 && r.stdout == "" && strings.Contains(r.stderr, "security event"):
				default:
					t.Errorf("exit %d\nstdout:\n%.300s\nstderr:\n%.300s", r.code, r.stdout, r.stderr)
				}
			})
		}
	}
}

func TestC14N(t *testing.T) {
	inputs, err := filepath.Glob("../../testdata/c14n/*.xml")
	if err != nil {
		t.Fatal(err)
	}
	if len(inputs) == 0 {
		t.Fatal("no testdata/c14n inputs")
	}
	for _, in := range inputs {
		t.Run(filepath.Base(in), func(t *testing.T) {
			want, err := os.ReadFile(strings.TrimSuffix(in, ".xml") + ".c14n")
			if err != nil {
				t.Fatal(err)
			}
			r := runBinary(t, ".", "", "c14n", in)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			if diff := cmp.Diff(string(want), r.stdout); diff != "" {
				t.Errorf("c14n (-want +got):\n%s", diff)
			}
		})
	}
	tests := []struct {
		name, stdin string
		args        []string
		code        int
		stdout      string
		stderr      string
	}{
		{"stdin", `<b xmlns:x="urn:x"><a   z="1" a="2"/></b>`, []string{"c14n", "-"}, 0, `<b><a a="2" z="1"></a></b>`, ""},
		{"malformed", "<a><b></a>", []string{"c14n", "-"}, 1, "", "xmlpipe c14n: parse: message is not well-formed XML\n  parse line 1"},
		{"doctype", `<!DOCTYPE a [<!ENTITY e "x">]><a>&e;</a>`, []string{"c14n", "-"}, 1, "", "DOCTYPE is not allowed"},
		{"no file", "", []string{"c14n"}, 2, "", "usage: xmlpipe c14n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runBinary(t, ".", tt.stdin, tt.args...)
			if r.code != tt.code || r.stdout != tt.stdout || !strings.Contains(r.stderr, tt.stderr) {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d, %q, containing %q",
					r.code, r.stdout, r.stderr, tt.code, tt.stdout, tt.stderr)
			}
		})
	}
}

func TestGen(t *testing.T) {
	dir := t.TempDir()
	if r := runBinary(t, dir, "", "gen", "-check", "-out", "out"); r.code != 1 || !strings.Contains(r.stderr, "is missing") {
		t.Fatalf("check of an empty tree: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := runBinary(t, dir, "", "gen", "-out", "out"); r.code != 0 {
		t.Fatalf("gen: exit %d: %s", r.code, r.stderr)
	}
	if r := runBinary(t, dir, "", "gen", "-out", "out", "-check"); r.code != 0 {
		t.Fatalf("check after gen: exit %d: %s", r.code, r.stderr)
	}
	xsd := filepath.Join(dir, "out", "greeter", "v1.xsd")
	if err := os.WriteFile(xsd, []byte("<stale/>"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runBinary(t, dir, "", "gen", "-check", "-out", "out")
	if r.code != 1 || !regexp.MustCompile(`greeter.v1\.xsd differs`).MatchString(r.stderr) {
		t.Fatalf("check of a stale tree: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := runBinary(t, dir, "", "gen", "extra"); r.code != 2 {
		t.Errorf("gen with an argument: exit %d; want 2", r.code)
	}
}

func TestUsage(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout bool // usage on stdout (else stderr)
	}{
		{"no arguments", nil, 2, false},
		{"help", []string{"help"}, 0, true},
		{"unknown command", []string{"frobnicate"}, 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runBinary(t, ".", "", tt.args...)
			if r.code != tt.code {
				t.Fatalf("exit %d; want %d", r.code, tt.code)
			}
			usage := r.stderr
			if tt.stdout {
				usage = r.stdout
			}
			for _, c := range commands() {
				if !regexp.MustCompile(`(?m)^  ` + c.name + ` .+\S$`).MatchString(usage) {
					t.Errorf("usage lacks a line for %s:\n%s", c.name, usage)
				}
			}
		})
	}
	if r := runBinary(t, ".", "", "console", "-h"); r.code != 0 || !strings.Contains(r.stdout, "-verbose") {
		t.Errorf("console -h: exit %d, stdout %q", r.code, r.stdout)
	}
}

// TestValidateProfileReachingNothing: a profile whose listeners: match no
// listener (a misspelt name) is listed as reaching no listener, not with a
// blank where its table would be.
func TestValidateProfileReachingNothing(t *testing.T) {
	dir := t.TempDir()
	yaml := `organism: {name: t}
profiles:
  calc: {listeners: [calculator]}
listeners:
  - {name: calculate, payload_class: tools.Calculate, handler: tools.Calculate, description: Evaluates arithmetic}
`
	if err := os.WriteFile(filepath.Join(dir, "organism.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runBinary(t, dir, "", "validate", "organism.yaml")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	want := "  calc → no listener (network: any address; retention: journal's retain_forever)\n"
	if !strings.Contains(r.stdout, want) {
		t.Errorf("validate lacks %q:\n%s", want, r.stdout)
	}
}
