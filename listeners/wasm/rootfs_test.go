package wasm

import (
	"context"
	"encoding/xml"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// opResult is the ops guest's answer.
type opResult struct {
	OK     bool
	Result string
	Error  string
}

// refused reports whether the operation failed with an error whose text
// has want (any case: wasip1's errno texts are capitalised).
func (r opResult) refused(want string) bool {
	return !r.OK && strings.Contains(strings.ToLower(r.Error), want)
}

// runOp has the ops guest perform one operation; a guest that does not
// answer within 30 s (a host call blocked, which no context interrupts)
// fails the test.
func runOp(t *testing.T, m *Module, do, path, arg string) opResult {
	t.Helper()
	var in strings.Builder
	in.WriteString("<Ops><Do>" + do + "</Do><Path>")
	_ = xml.EscapeText(&in, []byte(path))
	in.WriteString("</Path><Arg>")
	_ = xml.EscapeText(&in, []byte(arg))
	in.WriteString("</Arg></Ops>")
	type answer struct {
		out []byte
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		out, err := m.Call(context.Background(), []byte(in.String()))
		ch <- answer{out, err}
	}()
	var out []byte
	select {
	case a := <-ch:
		if a.err != nil {
			t.Fatalf("%s %s %s: %v", do, path, arg, a.err)
		}
		out = a.out
	case <-time.After(30 * time.Second):
		t.Fatalf("%s %s %s: no answer in 30 s: the host is blocked", do, path, arg)
	}
	var r opResult
	if err := xml.Unmarshal(out, &r); err != nil {
		t.Fatalf("%s %s: answer %s: %v", do, path, out, err)
	}
	return r
}

// hostTree lists every path under dir with its content (files) or link
// target (symbolic links), to tell whether anything outside changed.
func hostTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out = append(out, rel+" -> "+target)
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out = append(out, rel+": "+string(b))
		default:
			out = append(out, rel+" "+d.Type().String())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// sandboxLayout makes base/{victim,outside/passwd} and the sandbox
// directory base/wdata holding a file, a subdirectory and the hostile links
// an operator may have left there: hostetc -> /etc (only ever read through,
// so that a broken sandbox cannot harm the host), abs -> base/outside (an
// absolute link the test may write through) and up -> ../victim.
func sandboxLayout(t *testing.T) (base, dir string) {
	t.Helper()
	base = t.TempDir()
	dir = filepath.Join(base, "wdata")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{dir, filepath.Join(dir, "sub"), outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, content := range map[string]string{
		filepath.Join(base, "victim"):    "victim",
		filepath.Join(outside, "passwd"): "victim outside",
		filepath.Join(dir, "hello.txt"):  "inside",
	} {
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"hostetc": "/etc", "abs": outside, "up": "../victim", "sub/in": "../hello.txt"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	return base, dir
}

// TestGuestPathsResolveBeneathDir runs every path operation a guest has
// against a directory holding links out of it, and checks each is refused
// (and nothing outside the directory changed) or stays inside.
func TestGuestPathsResolveBeneathDir(t *testing.T) {
	base, dir := sandboxLayout(t)
	outside := hostTree(t, filepath.Join(base, "outside"))
	m := compileGuest(t, "ops", Reactor, Sandbox{Dir: dir, DirWritable: true, Timeout: time.Minute})
	tests := []struct {
		do, path, arg string
		ok            bool
		result        string // the answer, when ok
		errHas        string // part of the error text, when refused
	}{
		{do: "read", path: "/data/hello.txt", ok: true, result: "inside"},
		{do: "list", path: "/data", ok: true, result: "abs,hello.txt,hostetc,sub,up"},
		{do: "list", path: "/data/sub", ok: true, result: "in"},
		{do: "read", path: "/data/sub/in", ok: true, result: "inside"}, // a link inside: followed
		// Absolute links: refused.
		{do: "read", path: "/data/hostetc/passwd", errHas: "not permitted"},
		{do: "stat", path: "/data/hostetc/passwd", errHas: "not permitted"},
		{do: "list", path: "/data/hostetc", errHas: "not permitted"},
		{do: "read", path: "/data/abs/passwd", errHas: "not permitted"},
		{do: "write", path: "/data/abs/passwd", arg: "overwritten", errHas: "not permitted"},
		{do: "write", path: "/data/abs/new", arg: "x", errHas: "not permitted"},
		{do: "mkdir", path: "/data/abs/made", errHas: "not permitted"},
		{do: "remove", path: "/data/abs/passwd", errHas: "not permitted"},
		{do: "rename", path: "/data/abs/passwd", arg: "/data/stolen", errHas: "not permitted"},
		{do: "link", path: "/data/abs/passwd", arg: "/data/stolen", errHas: "not permitted"},
		// A link climbing out: refused.
		{do: "read", path: "/data/up", errHas: "not permitted"},
		{do: "stat", path: "/data/up", errHas: "not permitted"},
		{do: "write", path: "/data/up", arg: "overwritten", errHas: "not permitted"},
		{do: "append", path: "/data/up", arg: "appended", errHas: "not permitted"},
		// Paths climbing out: refused.
		{do: "read", path: "/data/../victim"},
		{do: "read", path: "/data/sub/../../victim"},
		{do: "write", path: "/data/../outside/new", arg: "x"},
		{do: "read", path: "/etc/passwd"},
		// The links themselves may be looked at.
		{do: "lstat", path: "/data/hostetc", ok: true, result: "L--------- 4"},
		{do: "readlink", path: "/data/hostetc", ok: true, result: "/etc"},
		// Links the guest makes: an absolute or climbing target is refused.
		{do: "symlink", path: "/data/v", arg: "../../victim", errHas: "not permitted"},
		{do: "read", path: "/data/v", errHas: "no such file"},
		{do: "write", path: "/data/v", arg: "overwritten", ok: true}, // a new file in the dir, not the victim
		{do: "symlink", path: "/data/abs2", arg: "/etc/passwd", errHas: "not permitted"},
		{do: "symlink", path: "/data/sub/dotdot", arg: "../hello.txt", errHas: "not permitted"},
		{do: "symlink", path: "/data/mine", arg: "sub/in", ok: true},
		{do: "read", path: "/data/mine", ok: true, result: "inside"},
		// Renames and hard links stay inside.
		{do: "rename", path: "/data/hello.txt", arg: "/data/../moved"},
		{do: "rename", path: "/data/up", arg: "/data/sub/up", ok: true}, // the link moves, still refused
		{do: "read", path: "/data/sub/up", errHas: "no such file"},      // ../victim from sub: wdata/victim
		{do: "link", path: "/data/hello.txt", arg: "/data/../hard"},
		{do: "link", path: "/data/hello.txt", arg: "/data/sub/hard", errHas: "not permitted"}, // no hard links at all
		{do: "read", path: "/data/sub/hard", errHas: "no such file"},
		{do: "mkdir", path: "/data/../made"},
		{do: "remove", path: "/data/sub", errHas: "not empty"},
		{do: "remove", path: "/data/abs", ok: true}, // the link goes, not what it names
	}
	for _, tc := range tests {
		r := runOp(t, m, tc.do, tc.path, tc.arg)
		switch {
		case r.OK != tc.ok:
			t.Errorf("%s %s %s: ok = %v (%q %q), want %v", tc.do, tc.path, tc.arg, r.OK, r.Result, r.Error, tc.ok)
		case tc.ok && tc.result != "" && r.Result != tc.result:
			t.Errorf("%s %s: got %q, want %q", tc.do, tc.path, r.Result, tc.result)
		case !tc.ok && !r.refused(tc.errHas):
			t.Errorf("%s %s %s: error %q, want one with %q", tc.do, tc.path, tc.arg, r.Error, tc.errHas)
		}
		if strings.Contains(r.Result, "root:") || strings.Contains(r.Result, "victim") {
			t.Errorf("%s %s: read outside the directory: %q", tc.do, tc.path, r.Result)
		}
	}
	if b, err := os.ReadFile(filepath.Join(base, "victim")); err != nil || string(b) != "victim" {
		t.Errorf("the file outside was changed: %q, %v", b, err)
	}
	if got := hostTree(t, filepath.Join(base, "outside")); strings.Join(got, "\n") != strings.Join(outside, "\n") {
		t.Errorf("outside the directory: %q, was %q", got, outside)
	}
	for _, p := range []string{"moved", "hard", "made", "v", "stolen"} {
		if _, err := os.Lstat(filepath.Join(base, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s made beside the directory: %v", p, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "abs")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the abs link is still there: %v", err)
	}
}

// TestReadOnlyDirRefusesChanges: with dir_writable false nothing in the
// directory changes, whatever the guest calls.
func TestReadOnlyDirRefusesChanges(t *testing.T) {
	_, dir := sandboxLayout(t)
	before := hostTree(t, dir)
	m := compileGuest(t, "ops", Reactor, Sandbox{Dir: dir, Timeout: time.Minute})
	for _, op := range [][3]string{
		{"write", "/data/new", "x"}, {"write", "/data/hello.txt", "x"}, {"append", "/data/hello.txt", "x"},
		{"mkdir", "/data/d", ""}, {"remove", "/data/hello.txt", ""}, {"remove", "/data/sub/in", ""},
		{"symlink", "/data/l", "hello.txt"}, {"link", "/data/hello.txt", "/data/h2"},
		{"rename", "/data/hello.txt", "/data/h3"},
	} {
		if r := runOp(t, m, op[0], op[1], op[2]); !r.refused("read-only file system") {
			t.Errorf("%v: %+v, want a read-only refusal", op, r)
		}
	}
	if r := runOp(t, m, "read", "/data/hello.txt", ""); !r.OK || r.Result != "inside" {
		t.Errorf("read: %+v", r)
	}
	if got := hostTree(t, dir); strings.Join(got, "\n") != strings.Join(before, "\n") {
		t.Errorf("the read-only directory changed: %q, was %q", got, before)
	}
}

// TestNonRegularFilesDoNotBlock: a FIFO in the directory (no writer, no
// reader) is refused at once instead of holding the guest and its host
// goroutine until someone opens the other end.
func TestNonRegularFilesDoNotBlock(t *testing.T) {
	_, dir := sandboxLayout(t)
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	if err := os.Symlink("fifo", filepath.Join(dir, "to-fifo")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // should a host call be stuck opening the FIFO, release it
		for _, flag := range []int{os.O_RDONLY, os.O_WRONLY} {
			if f, err := os.OpenFile(filepath.Join(dir, "fifo"), flag|syscall.O_NONBLOCK, 0); err == nil {
				_ = f.Close()
			}
		}
	})
	m := compileGuest(t, "ops", Reactor, Sandbox{Dir: dir, DirWritable: true, Timeout: time.Minute})
	for _, op := range [][3]string{
		{"read", "/data/fifo", ""}, {"write", "/data/fifo", "x"}, {"append", "/data/fifo", "x"},
		{"read", "/data/to-fifo", ""},
	} {
		start := time.Now()
		if r := runOp(t, m, op[0], op[1], op[2]); !r.refused("permission denied") {
			t.Errorf("%v: %+v, want a refusal", op, r)
		}
		if d := time.Since(start); d > 20*time.Second {
			t.Errorf("%v took %s", op, d)
		}
	}
	if r := runOp(t, m, "stat", "/data/fifo", ""); !r.OK { // a stat does not open it
		t.Errorf("stat of the FIFO: %+v", r)
	}
}

// TestOpenFilesAreBounded: a guest that opens files without closing them
// gets EAGAIN past maxOpenFiles instead of using up the organism's file
// descriptors, and every one it held is closed once the call ends (the
// instance is dropped).
func TestOpenFilesAreBounded(t *testing.T) {
	fds := func() int {
		es, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip("no /proc/self/fd:", err)
		}
		return len(es)
	}
	_, dir := sandboxLayout(t)
	before := fds()
	m, err := Compile(context.Background(), "ops", guest(t, "ops", Reactor), Sandbox{Dir: dir, Instances: 1}, testCache, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The guest's /data directory itself is one of the open files.
	r := runOp(t, m, "hold", "/data/hello.txt", strconv.Itoa(maxOpenFiles+50))
	if !r.refused("try again") || r.Result != strconv.Itoa(maxOpenFiles-1) {
		t.Fatalf("%+v: want %d files opened, then EAGAIN", r, maxOpenFiles-1)
	}
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := fds() - before; n > 8 { // the runtime's own may come and go
		t.Fatalf("%d descriptors more than before the module", n)
	}
}
