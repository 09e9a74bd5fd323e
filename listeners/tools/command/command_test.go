package command

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/tools"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

func call(t *testing.T, c tools.Config, p RunCommand) *RunCommandResult {
	t.Helper()
	resp, err := (&Tool{Policy: tools.Fixed(c)}).Handle(context.Background(), &p, xmlpipe.Metadata{From: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	return resp.(*xmlpipe.RespondResponse).Payload.(*RunCommandResult)
}

// runAs is the run_as the tests run programs as: the default (nobody) when
// the tests run as root, else the tests' own user.
func runAs() string {
	if os.Geteuid() == 0 {
		return ""
	}
	return Self
}

// cmds builds an allow-list: "name" or "name arg-pattern…".
func cmds(specs ...string) []tools.Command {
	out := make([]tools.Command, len(specs))
	for i, s := range specs {
		f := strings.Fields(s)
		out[i] = tools.Command{Name: f[0], Args: f[1:]}
	}
	return out
}

// openDirs makes dir and its parents up to the temp root traversable by
// everyone, so programs running as nobody reach what a test put there.
func openDirs(t *testing.T, dir string) {
	t.Helper()
	for d := dir; d != os.TempDir() && d != "/" && d != "."; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRunCommand(t *testing.T) {
	t.Setenv("XMLPIPE_VISIBLE", "yes")
	t.Setenv("XMLPIPE_HIDDEN", "no")
	c := tools.Config{AllowedCommands: cmds("echo {text}", "false", "sleep {int}", "seq {int}", "env", "cat", "pwd"),
		Env: []string{"XMLPIPE_VISIBLE", "PATH"}, Timeout: 300 * time.Millisecond, MaxBytes: 100, RunAs: runAs()}

	r := call(t, c, RunCommand{Command: "echo", Args: []string{"hello", "$(id)", "; rm -rf ~", "*"}})
	if r.Error != "" || r.ExitCode != 0 || r.Stdout != "hello $(id) ; rm -rf ~ *\n" {
		t.Fatalf("echo: %+v", r)
	}
	if r := call(t, c, RunCommand{Command: "cat", Stdin: "piped"}); r.Stdout != "piped" {
		t.Fatalf("stdin: %+v", r)
	}
	if r := call(t, c, RunCommand{Command: "false"}); r.Error != "" || r.ExitCode != 1 {
		t.Fatalf("false: %+v", r)
	}
	if r := call(t, c, RunCommand{Command: "env"}); r.Error != "" || r.Stdout != "PATH="+SafePath+"\nXMLPIPE_VISIBLE=yes\n" {
		t.Fatalf("environment: %+v", r)
	}
	r = call(t, c, RunCommand{Command: "pwd"})
	wd := strings.TrimSpace(r.Stdout)
	if r.Error != "" || !strings.Contains(filepath.Base(wd), "xmlpipe-run-") {
		t.Fatalf("working directory: %+v", r)
	}
	if _, err := os.Stat(wd); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("working directory %s left behind: %v", wd, err)
	}
	if r := call(t, c, RunCommand{Command: "seq", Args: []string{"100000"}}); !r.Truncated || len(r.Stdout) != 100 {
		t.Fatalf("cap: truncated=%v len=%d", r.Truncated, len(r.Stdout))
	}
	start := time.Now()
	if r := call(t, c, RunCommand{Command: "sleep", Args: []string{"30"}}); !r.TimedOut || !strings.Contains(r.Error, "timed out") {
		t.Fatalf("timeout: %+v", r)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("timeout took %s", d)
	}

	refusals := []struct {
		name string
		c    tools.Config
		cmd  string
		args []string
		want string
	}{
		{"empty allow-list", tools.Config{}, "echo", nil, "not in the allow-list"},
		{"not listed", c, "rm", nil, "not in the allow-list"},
		{"shell", c, "sh", []string{"-c", "id"}, "not in the allow-list"},
		{"command line", c, "echo hi; rm -rf /", nil, "not in the allow-list"},
		{"path to a listed name", c, "/bin/rm", nil, "not in the allow-list"},
		{"path to the listed program", c, "/bin/echo", nil, "not in the allow-list"},
		{"relative path", tools.Config{AllowedCommands: cmds("./echo")}, "./echo", nil, "a bare name or an absolute path"},
		{"empty", c, " ", nil, "empty command"},
		{"missing program", tools.Config{AllowedCommands: cmds("xmlpipe-no-such-program")}, "xmlpipe-no-such-program", nil, "not found"},
		{"argument to a plain name", c, "cat", []string{"x"}, `cat argument 1 "x" (cat accepts no arguments)`},
		{"an option", c, "echo", []string{"-e", "x"}, `echo argument 1 "-e"`},
		{"a path as text", c, "echo", []string{"/etc/passwd"}, `argument 1 "/etc/passwd"`},
		{"dot-dot as text", c, "echo", []string{".."}, `argument 1 ".."`},
		{"negative int", c, "seq", []string{"-1"}, `argument 1 "-1"`},
		{"too many arguments", c, "echo", make([]string, MaxArgs+1), "257 arguments"},
		{"huge argument", c, "echo", []string{strings.Repeat("x", MaxArgBytes+1)}, "4097 bytes"},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, tc.c, RunCommand{Command: tc.cmd, Args: tc.args})
			if !strings.Contains(r.Error, tc.want) || r.ExitCode != -1 || r.Stdout != "" || r.Stderr != "" {
				t.Fatalf("%+v, want error %q", r, tc.want)
			}
		})
	}
}

// TestRunCommandArguments: what each pattern accepts and what the program
// is given.
func TestRunCommandArguments(t *testing.T) {
	base := t.TempDir()
	notes, docs, data, outside := filepath.Join(base, "notes"), filepath.Join(base, "docs"), filepath.Join(base, "data"),
		filepath.Join(base, "outside")
	for _, d := range []string{notes, docs, data, outside, filepath.Join(notes, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	openDirs(t, base)
	if err := os.Chmod(data, 0o700); err != nil {
		t.Fatal(err)
	}
	for path, content := range map[string]string{
		filepath.Join(notes, "a.txt"): "one\ntwo\n", filepath.Join(docs, "b.txt"): "b\n",
		filepath.Join(outside, "secret.txt"): "secret\n", filepath.Join(data, "db"): "data\n",
	} {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		filepath.Join(notes, "out.txt"):  filepath.Join(outside, "secret.txt"),
		filepath.Join(notes, "outdir"):   outside,
		filepath.Join(notes, "in.txt"):   "a.txt",
		filepath.Join(notes, "data.txt"): filepath.Join(data, "db"),
	}
	for link, target := range links {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(notes, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := tools.Config{AllowedPaths: []string{notes, docs}, DataDir: data, RunAs: runAs(),
		AllowedCommands: []tools.Command{
			{Name: "wc", Args: []string{"-l", "{file}"}},
			{Name: "ls", Args: []string{"{dir}"}},
			{Name: "head", Args: []string{"--lines={int}", "{file}"}},
			{Name: "echo", Args: []string{"+{text}", "n={int}"}},
		}}
	ok := []struct {
		cmd  string
		args []string
		want string
	}{
		{"wc", []string{"-l", "notes/a.txt"}, "2 " + filepath.Join(notes, "a.txt") + "\n"},
		{"wc", []string{"-l", "a.txt"}, "2 " + filepath.Join(notes, "a.txt") + "\n"},
		{"wc", []string{"-l", "docs/b.txt"}, "1 " + filepath.Join(docs, "b.txt") + "\n"},
		{"wc", []string{"-l", "notes/in.txt"}, "2 " + filepath.Join(notes, "a.txt") + "\n"},
		{"wc", []string{"-l", filepath.Join(notes, "a.txt")}, "2 " + filepath.Join(notes, "a.txt") + "\n"},
		{"wc", []string{"-l", "-l", "notes/sub/../a.txt"}, "2 " + filepath.Join(notes, "a.txt") + "\n"},
		{"ls", []string{"notes/sub"}, ""},
		{"head", []string{"--lines=1", "notes/a.txt"}, "one\n"},
		{"echo", []string{"+%Y", "n=7"}, "+%Y n=7\n"},
	}
	for _, tc := range ok {
		if r := call(t, c, RunCommand{Command: tc.cmd, Args: tc.args}); r.Error != "" || r.ExitCode != 0 || r.Stdout != tc.want {
			t.Errorf("%s %q: %+v, want stdout %q", tc.cmd, tc.args, r, tc.want)
		}
	}
	refused := []struct {
		cmd  string
		args []string
		want string
	}{
		{"wc", []string{"-w", "notes/a.txt"}, `argument 1 "-w"`},
		{"wc", []string{"-l", "../outside/secret.txt"}, "outside the allowed roots"},
		{"wc", []string{"-l", filepath.Join(outside, "secret.txt")}, "outside the allowed roots"},
		{"wc", []string{"-l", "notes/out.txt"}, "escapes"},
		{"wc", []string{"-l", "notes/outdir/secret.txt"}, "escapes"},
		{"wc", []string{"-l", "notes/data.txt"}, "escapes"},
		{"wc", []string{"-l", "notes/nope.txt"}, "notes/nope.txt: no such file"},
		{"wc", []string{"-l", "notes/sub"}, "notes/sub is not a regular file"},
		{"wc", []string{"-l", "notes/fifo"}, "notes/fifo is not a regular file"},
		{"wc", []string{"-l", "/etc/passwd"}, "outside the allowed roots"},
		{"ls", []string{"notes/a.txt"}, "notes/a.txt is not a directory"},
		{"ls", []string{"notes/outdir"}, "escapes"},
		{"ls", []string{"/"}, "outside the allowed roots"},
		{"head", []string{"--lines=-1", "notes/a.txt"}, `argument 1 "--lines=-1"`},
		{"head", []string{"--lines", "1"}, `argument 1 "--lines"`},
		{"echo", []string{"%Y"}, `argument 1 "%Y"`},
		{"echo", []string{"+/etc/passwd"}, `argument 1 "+/etc/passwd"`},
		{"echo", []string{"n=x"}, `argument 1 "n=x"`},
		{"echo", []string{"+a\x00b"}, "argument 1 holds a NUL byte"},
		{"wc", []string{"-l", "a.txt\x00../../outside/secret.txt"}, "argument 2 holds a NUL byte"},
	}
	for _, tc := range refused {
		r := call(t, c, RunCommand{Command: tc.cmd, Args: tc.args})
		if !strings.Contains(r.Error, tc.want) || r.ExitCode != -1 || r.Stdout != "" {
			t.Errorf("%s %q: %+v, want error %q", tc.cmd, tc.args, r, tc.want)
		}
		if strings.Contains(r.Error, base) && !strings.Contains(strings.Join(tc.args, " "), base) {
			t.Errorf("%s %q: the error shows a host path: %q", tc.cmd, tc.args, r.Error)
		}
	}
	// Entries of one command are alternatives.
	alt := tools.Config{RunAs: runAs(), AllowedCommands: cmds("echo", "echo -n {text}")}
	if r := call(t, alt, RunCommand{Command: "echo"}); r.Error != "" || r.Stdout != "\n" {
		t.Fatalf("first alternative: %+v", r)
	}
	if r := call(t, alt, RunCommand{Command: "echo", Args: []string{"-n", "x"}}); r.Error != "" || r.Stdout != "x" {
		t.Fatalf("second alternative: %+v", r)
	}
}

// TestRunCommandKeyExploit is issue 30's hole: with the README's old
// example (allowed_commands: [date, wc]) "date -f <data dir>/keys/owner.ed25519"
// printed the organism's private key. Every shape of the allow-list refuses
// it before any process starts, and so does "date --set".
func TestRunCommandKeyExploit(t *testing.T) {
	base := t.TempDir()
	data, notes, bin, marks := filepath.Join(base, "data"), filepath.Join(base, "notes"), filepath.Join(base, "bin"),
		filepath.Join(base, "marks")
	for _, d := range []string{filepath.Join(data, "keys"), notes, bin, marks} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	openDirs(t, bin)
	openDirs(t, notes)
	if err := os.Chmod(marks, 0o777); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(data, "keys", "owner.ed25519")
	if err := os.WriteFile(key, []byte("PRIVATE-KEY-MATERIAL\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// spy stands in for date: it records that it ran.
	spy := filepath.Join(bin, "date")
	script := "#!/bin/sh\necho ran >> " + filepath.Join(marks, "ran") + "\necho ran\n"
	if err := os.WriteFile(spy, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, prog := range []string{"date", spy} {
		configs := map[string]tools.Config{
			"plain name":        {AllowedCommands: []tools.Command{{Name: prog}}},
			"README example":    {AllowedCommands: []tools.Command{{Name: prog}, {Name: "wc", Args: []string{"-l", "-w", "{file}"}}}, AllowedPaths: []string{notes}},
			"a format argument": {AllowedCommands: []tools.Command{{Name: prog, Args: []string{"+{text}"}}}},
			"-f declared":       {AllowedCommands: []tools.Command{{Name: prog, Args: []string{"-f", "{file}"}}}, AllowedPaths: []string{notes}},
		}
		for name, c := range configs {
			c.DataDir, c.RunAs = data, runAs()
			for _, args := range [][]string{
				{"-f", key},
				{"-f", "../data/keys/owner.ed25519"},
				{"-f/etc/shadow"},
				{"--file=" + key},
				{"--set=2001-01-01"},
				{"-s", "2001-01-01"},
			} {
				r := call(t, c, RunCommand{Command: prog, Args: args})
				if r.Error == "" || r.ExitCode != -1 || r.Stdout != "" || r.Stderr != "" {
					t.Errorf("%s, %s %q: not refused: %+v", name, prog, args, r)
				}
				if strings.Contains(r.Stdout+r.Stderr+r.Error, "PRIVATE-KEY") {
					t.Fatalf("%s, %s %q: the key leaked: %+v", name, prog, args, r)
				}
			}
		}
	}
	if _, err := os.Stat(filepath.Join(marks, "ran")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a refused call started the program")
	}
	// The spy does run when a call is allowed (so its silence above means
	// something).
	c := tools.Config{AllowedCommands: []tools.Command{{Name: spy}}, RunAs: runAs(), DataDir: data}
	if r := call(t, c, RunCommand{Command: spy}); r.Error != "" || r.Stdout != "ran\n" {
		t.Fatalf("spy: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(marks, "ran")); err != nil {
		t.Fatalf("spy left no mark: %v", err)
	}
	// A root over the data directory is refused at load and at call time.
	over := tools.Config{AllowedCommands: cmds("date -f {file}"), AllowedPaths: []string{data}, DataDir: data, RunAs: runAs()}
	if err := Check(over); err == nil || !strings.Contains(err.Error(), "data directory") {
		t.Fatalf("Check over the data directory: %v", err)
	}
	if r := call(t, over, RunCommand{Command: "date", Args: []string{"-f", "keys/owner.ed25519"}}); !strings.Contains(r.Error, "data directory") {
		t.Fatalf("call over the data directory: %+v", r)
	}
}

// TestRunCommandDropsPrivileges runs programs for real as the run_as user:
// the tests run as root on CI, so the drop is exercised there.
func TestRunCommandDropsPrivileges(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: dropping to the run_as user needs root (covered by TestCredential)")
	}
	data := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	c := tools.Config{AllowedCommands: []tools.Command{{Name: "id", Args: []string{"-u", "-g", "-G"}}, {Name: "ls", Args: []string{data}}},
		DataDir: data}
	for _, tc := range []struct {
		runAs, args, want string
	}{
		{"", "-u", "65534"},
		{"", "-g", "65534"},
		{"", "-G", "65534"},
		{"nobody", "-u", "65534"},
		{"4242:4343", "-u", "4242"},
		{"4242:4343", "-G", "4343"},
		{"4242", "-g", "4242"},
	} {
		c.RunAs = tc.runAs
		r := call(t, c, RunCommand{Command: "id", Args: []string{tc.args}})
		if r.Error != "" || strings.TrimSpace(r.Stdout) != tc.want {
			t.Errorf("run_as %q: id %s = %+v, want %s", tc.runAs, tc.args, r, tc.want)
		}
	}
	// Even a literal naming the data directory (an operator's mistake)
	// reaches nothing: the program is not root and the directory is closed.
	c.RunAs = ""
	if r := call(t, c, RunCommand{Command: "ls", Args: []string{data}}); r.Error != "" || r.ExitCode == 0 ||
		!strings.Contains(r.Stderr, "Permission denied") {
		t.Fatalf("ls of the data directory as nobody: %+v", r)
	}
	// A data directory open to the run_as user: nothing runs.
	if err := os.Chmod(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if r := call(t, c, RunCommand{Command: "id", Args: []string{"-u"}}); !strings.Contains(r.Error, "data directory is open") || r.Stdout != "" {
		t.Fatalf("open data directory: %+v", r)
	}
	// As root, self would mean root.
	c.RunAs = Self
	if r := call(t, c, RunCommand{Command: "id", Args: []string{"-u"}}); !strings.Contains(r.Error, "would run programs as root") {
		t.Fatalf("self as root: %+v", r)
	}
}

// TestCredential is the run_as decision for a root and a non-root organism.
func TestCredential(t *testing.T) {
	data := t.TempDir() // owned by the test's user
	if err := os.Chmod(data, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		runAs string
		euid  int
		uid   uint32 // 0: no switch
		want  string
	}{
		{"", 0, 65534, ""},
		{"65534:65534", 0, 65534, ""},
		{"1000", 0, 1000, ""},
		{Self, 0, 0, "would run programs as root"},
		{"", 1000, 0, "the organism is not root"},
		{"2000", 1000, 0, "the organism is not root"},
		{"1000", 1000, 0, ""},
		{Self, 1000, 0, ""},
	} {
		id, err := parseRunAs(tc.runAs)
		if err != nil {
			t.Fatal(err)
		}
		cred, err := id.credential(tc.euid, data)
		switch {
		case tc.want != "":
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("run_as %q as %d: err = %v, want %q", tc.runAs, tc.euid, err, tc.want)
			}
		case err != nil:
			t.Errorf("run_as %q as %d: %v", tc.runAs, tc.euid, err)
		case tc.uid == 0 && cred != nil, tc.uid != 0 && (cred == nil || cred.Uid != tc.uid || len(cred.Groups) != 0):
			t.Errorf("run_as %q as %d: credential %+v, want uid %d", tc.runAs, tc.euid, cred, tc.uid)
		}
	}
}

// TestCheckRunAsSelf: run_as self is refused at load for an organism
// running as root (each call would be), and accepted for any other.
func TestCheckRunAsSelf(t *testing.T) {
	for _, tc := range []struct {
		euid int
		want string
	}{
		{0, "run_as self would run programs as root"},
		{1000, ""},
	} {
		err := check(tools.Config{AllowedCommands: cmds("date"), RunAs: Self}, tc.euid)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("as %d: %v", tc.euid, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrPrivileges)):
			t.Errorf("as %d: err = %v, want %q", tc.euid, err, tc.want)
		}
	}
}

func TestCheck(t *testing.T) {
	base := t.TempDir()
	notes, data := filepath.Join(base, "notes"), filepath.Join(base, "data")
	for _, d := range []string{notes, data} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		c    tools.Config
		want string
	}{
		{"ok", tools.Config{AllowedCommands: []tools.Command{{Name: "date"}, {Name: "wc", Args: []string{"-l", "{file}"}}}, AllowedPaths: []string{notes}}, ""},
		{"absolute", tools.Config{AllowedCommands: cmds("/bin/date +{text}")}, ""},
		{"nothing", tools.Config{}, ""},
		{"missing program", tools.Config{AllowedCommands: cmds("xmlpipe-no-such-program")}, "not found"},
		{"spaces", tools.Config{AllowedCommands: []tools.Command{{Name: "date -f"}}}, "without arguments or spaces"},
		{"relative path", tools.Config{AllowedCommands: cmds("bin/date")}, "a bare name or an absolute path"},
		{"empty name", tools.Config{AllowedCommands: []tools.Command{{Args: []string{"x"}}}}, "without a command"},
		{"unknown placeholder", tools.Config{AllowedCommands: cmds("date {path}")}, "unknown placeholder {path}"},
		{"placeholder not last", tools.Config{AllowedCommands: cmds("date {text}x")}, "must end the pattern"},
		{"two placeholders", tools.Config{AllowedCommands: cmds("date {text}{int}")}, "must end the pattern"},
		{"stray brace", tools.Config{AllowedCommands: cmds("date x}")}, "a stray }"},
		{"empty pattern", tools.Config{AllowedCommands: []tools.Command{{Name: "date", Args: []string{""}}}}, "an empty argument pattern"},
		{"file without roots", tools.Config{AllowedCommands: cmds("wc {file}")}, "needs allowed_paths"},
		{"missing root", tools.Config{AllowedCommands: cmds("wc {file}"), AllowedPaths: []string{filepath.Join(base, "nope")}}, "does not exist"},
		{"root over data", tools.Config{AllowedCommands: cmds("wc {file}"), AllowedPaths: []string{base}, DataDir: data}, "data directory"},
		{"run_as root", tools.Config{RunAs: "root"}, "programs never run as root"},
		{"run_as 0", tools.Config{RunAs: "0:0"}, "programs never run as root"},
		{"run_as gid 0", tools.Config{RunAs: "10:0"}, "programs never run as root"},
		{"run_as unknown", tools.Config{RunAs: "xmlpipe-no-such-user"}, "xmlpipe-no-such-user"},
		{"run_as garbage", tools.Config{RunAs: "1:x"}, "want a user name"},
		{"env PATH", tools.Config{Env: []string{"LANG", "PATH"}}, "PATH is fixed"},
		{"env assignment", tools.Config{Env: []string{"A=b"}}, "not a variable name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.c)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestRunCommandCallerEndsFirst: when the caller's context ends before the
// tool's own timeout — the handler's deadline, a kill — the program is
// killed at once and the error says so, naming the cause, instead of
// claiming the tool's (longer) timeout passed or reporting nothing.
func TestRunCommandCallerEndsFirst(t *testing.T) {
	c := tools.Config{AllowedCommands: cmds("sleep {int}"), Timeout: 10 * time.Minute, RunAs: runAs()}
	killed := errors.New("conversation killed")
	for _, tc := range []struct {
		name         string
		ctx          func() (context.Context, context.CancelFunc)
		wantErr      string
		wantTimedOut bool
	}{
		{name: "handler deadline", ctx: func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), time.Second)
		}, wantErr: "run_command: stopped before its 10m0s timeout: context deadline exceeded", wantTimedOut: true},
		{name: "killed", ctx: func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancelCause(context.Background())
			stop := time.AfterFunc(time.Second, func() { cancel(killed) })
			return ctx, func() { stop.Stop(); cancel(nil) }
		}, wantErr: "run_command: stopped before its 10m0s timeout: conversation killed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := tc.ctx()
			defer cancel()
			start := time.Now()
			p := RunCommand{Command: "sleep", Args: []string{"600"}}
			resp, err := (&Tool{Policy: tools.Fixed(c)}).Handle(ctx, &p, xmlpipe.Metadata{From: "agent"})
			if err != nil {
				t.Fatal(err)
			}
			r := resp.(*xmlpipe.RespondResponse).Payload.(*RunCommandResult)
			if r.Error != tc.wantErr || r.TimedOut != tc.wantTimedOut {
				t.Errorf("error %q, timed out %v; want %q, %v", r.Error, r.TimedOut, tc.wantErr, tc.wantTimedOut)
			}
			if d := time.Since(start); d > time.Minute {
				t.Errorf("the call took %s", d)
			}
		})
	}
}

// TestRunCommandAnswerFitsTheSizeCap: with max_bytes set over the message
// size cap, a program's output is cut (Truncated) where the answer would
// pass the pump's default cap, so the caller gets the output's start rather
// than an answer the pump refuses.
func TestRunCommandAnswerFitsTheSizeCap(t *testing.T) {
	resultType, err := xmlpipe.PayloadTypeOf[RunCommandResult]()
	if err != nil {
		t.Fatal(err)
	}
	c := tools.Config{AllowedCommands: cmds("seq {int}"), MaxBytes: 8 << 20, Timeout: time.Minute, RunAs: runAs()}
	for _, tc := range []struct {
		n             string
		wantTruncated bool
	}{
		{n: "1000"},
		{n: "500000", wantTruncated: true}, // 3.4 MB of digits and newlines
	} {
		t.Run(tc.n, func(t *testing.T) {
			r := call(t, c, RunCommand{Command: "seq", Args: []string{tc.n}})
			if r.Error != "" || r.ExitCode != 0 || r.Truncated != tc.wantTruncated || !strings.HasPrefix(r.Stdout, "1\n2\n") {
				t.Fatalf("error %q, exit %d, truncated %v, stdout %.20q…", r.Error, r.ExitCode, r.Truncated, r.Stdout)
			}
			b, err := resultType.AppendPayload(nil, r)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) >= stage.DefaultMaxBytes {
				t.Errorf("the answer is %d bytes, over the %d-byte message cap", len(b), stage.DefaultMaxBytes)
			}
		})
	}
}
