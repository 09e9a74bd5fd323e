package files

import (
	"context"
	"errors"
	"net"
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

func call(t *testing.T, c tools.Config, p Files) *FilesResult {
	t.Helper()
	resp, err := (&Tool{Policy: tools.Fixed(c)}).Handle(context.Background(), &p, xmlpipe.Metadata{From: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	return resp.(*xmlpipe.RespondResponse).Payload.(*FilesResult)
}

func TestFiles(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "linkdir")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "bin.dat"), []byte{0, 1, 2, 0xff}, 0o600); err != nil {
		t.Fatal(err)
	}
	c := tools.Config{AllowedPaths: []string{root}, MaxBytes: 64}

	// Happy paths.
	if r := call(t, c, Files{Op: "write", Path: filepath.Join(root, "a.txt"), Content: "hello"}); r.Error != "" || r.BytesWritten != 5 {
		t.Fatalf("write: %+v", r)
	}
	if r := call(t, c, Files{Op: "write", Path: "a.txt", Content: " world", Append: true}); r.Error != "" {
		t.Fatalf("append: %+v", r)
	}
	if r := call(t, c, Files{Op: "read", Path: "a.txt"}); r.Error != "" || r.Content != "hello world" || r.Size != 11 {
		t.Fatalf("read: %+v", r)
	}
	if err := os.MkdirAll(filepath.Join(root, "sub", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	if r := call(t, c, Files{Op: "write", Path: "sub/deep/b.txt", Content: "b"}); r.Error != "" {
		t.Fatalf("write sub: %+v", r)
	}
	r := call(t, c, Files{Op: "list", Path: root})
	var names []string
	for _, e := range r.Entries {
		names = append(names, e.Name+":"+e.Type)
	}
	if r.Error != "" || strings.Join(names, ",") != "a.txt:file,bin.dat:file,link.txt:other,linkdir:other,sub:dir" {
		t.Fatalf("list: %v %+v", names, r)
	}
	r = call(t, c, Files{Op: "list", Path: "sub", Recursive: true})
	if r.Error != "" || len(r.Entries) != 2 || r.Entries[1].Name != "deep/b.txt" {
		t.Fatalf("list recursive: %+v", r)
	}
	if r := call(t, c, Files{Op: "delete", Path: "sub", Recursive: true}); r.Error != "" {
		t.Fatalf("delete: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(root, "sub")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("sub still there: %v", err)
	}

	// Refusals.
	refusals := []struct {
		name string
		c    tools.Config
		p    Files
		want string
	}{
		{"no roots", tools.Config{}, Files{Op: "read", Path: "a.txt"}, "no roots configured"},
		{"absolute outside", c, Files{Op: "read", Path: filepath.Join(outside, "secret.txt")}, "outside the allowed roots"},
		{"dot-dot", c, Files{Op: "read", Path: "../" + filepath.Base(outside) + "/secret.txt"}, "outside the allowed roots"},
		{"dot-dot absolute", c, Files{Op: "read", Path: root + "/../" + filepath.Base(outside) + "/secret.txt"}, "outside the allowed roots"},
		{"NUL byte", c, Files{Op: "read", Path: "a.txt\x00../../" + filepath.Base(outside) + "/secret.txt"}, "files: path holds a NUL byte"},
		{"symlink out", c, Files{Op: "read", Path: "link.txt"}, "escapes"},
		{"symlinked dir out", c, Files{Op: "read", Path: "linkdir/secret.txt"}, "escapes"},
		{"write through symlink", c, Files{Op: "write", Path: "linkdir/new.txt", Content: "x"}, "escapes"},
		{"too large read", tools.Config{AllowedPaths: []string{root}, MaxBytes: 4}, Files{Op: "read", Path: "a.txt"}, "over the size cap"},
		{"too large write", c, Files{Op: "write", Path: "big.txt", Content: strings.Repeat("x", 65)}, "over the size cap"},
		{"binary", c, Files{Op: "read", Path: "bin.dat"}, "not UTF-8 text"},
		{"read-only write", tools.Config{AllowedPaths: []string{root}, ReadOnly: true}, Files{Op: "write", Path: "a.txt", Content: "x"}, "read-only"},
		{"read-only delete", tools.Config{AllowedPaths: []string{root}, ReadOnly: true}, Files{Op: "delete", Path: "a.txt"}, "read-only"},
		{"delete root", c, Files{Op: "delete", Path: root, Recursive: true}, "refusing to delete a root"},
		{"missing", c, Files{Op: "read", Path: "nope.txt"}, "no such file"},
		{"missing, absolute", c, Files{Op: "read", Path: filepath.Join(root, "sub", "nope.txt")}, "read " + filepath.Base(root) + "/sub/nope.txt: no such file"},
		{"missing dir to list", c, Files{Op: "list", Path: "nodir"}, "list " + filepath.Base(root) + "/nodir: no such file"},
		{"list a file", c, Files{Op: "list", Path: "a.txt"}, filepath.Base(root) + "/a.txt is not a directory"},
		{"delete missing", c, Files{Op: "delete", Path: "gone/x"}, "delete " + filepath.Base(root) + "/gone/x: no such file"},
		{"missing root", tools.Config{AllowedPaths: []string{filepath.Join(outside, "no-such-root")}}, Files{Op: "read", Path: "a.txt"}, "root unavailable: no-such-root"},
		{"read a directory", c, Files{Op: "read", Path: "."}, "not a regular file"},
		{"write over a directory", c, Files{Op: "write", Path: ".", Content: "x"}, "not a regular file"},
		{"bad op", c, Files{Op: "chmod", Path: "a.txt"}, "unknown op"},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, tc.c, tc.p)
			if !strings.Contains(r.Error, tc.want) {
				t.Fatalf("error %q, want %q", r.Error, tc.want)
			}
			if strings.Contains(r.Error, outside) || strings.Contains(r.Error, root) {
				t.Fatalf("error leaks a host path: %q", r.Error)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(outside, "new.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a write escaped through the symlink")
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret.txt")); string(b) != "secret" {
		t.Fatal("outside file changed")
	}
}

// TestFilesRootNames: a path's first segment names a root (its base name),
// whatever the number of roots; other relative paths are in the first root.
func TestFilesRootNames(t *testing.T) {
	base := t.TempDir()
	notes, docs := filepath.Join(base, "notes"), filepath.Join(base, "docs")
	for _, d := range []string{notes, docs, filepath.Join(notes, "notes")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path, content string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(notes, "hello.txt"), "hello from notes")
	write(filepath.Join(notes, "notes", "hello.txt"), "hello from notes/notes")
	write(filepath.Join(docs, "hello.txt"), "hello from docs")

	for _, roots := range [][]string{{notes}, {notes, docs}} {
		c := tools.Config{AllowedPaths: roots}
		for path, want := range map[string]string{
			"notes/hello.txt":       "hello from notes",
			"hello.txt":             "hello from notes",
			"./notes/hello.txt":     "hello from notes",
			"notes/notes/hello.txt": "hello from notes/notes",
			notes + "/hello.txt":    "hello from notes",
		} {
			if r := call(t, c, Files{Op: "read", Path: path}); r.Error != "" || r.Content != want {
				t.Errorf("roots %v: read %s = %+v, want %q", roots, path, r, want)
			}
		}
		r := call(t, c, Files{Op: "list", Path: "notes"})
		if r.Error != "" || len(r.Entries) != 2 || r.Entries[0].Name != "hello.txt" || r.Entries[1].Name != "notes" {
			t.Errorf("roots %v: list notes = %+v", roots, r)
		}
	}
	c := tools.Config{AllowedPaths: []string{notes, docs}}
	if r := call(t, c, Files{Op: "read", Path: "docs/hello.txt"}); r.Content != "hello from docs" {
		t.Fatalf("second root by name: %+v", r)
	}
	if r := call(t, c, Files{Op: "write", Path: "docs/new.txt", Content: "n"}); r.Error != "" {
		t.Fatalf("write in the second root: %+v", r)
	}
	if b, err := os.ReadFile(filepath.Join(docs, "new.txt")); err != nil || string(b) != "n" {
		t.Fatalf("written where? %q %v", b, err)
	}
	if r := call(t, c, Files{Op: "read", Path: "docs/../notes/hello.txt"}); r.Content != "hello from notes" {
		t.Fatalf("dot-dot between names: %+v", r)
	}
	if r := call(t, c, Files{Op: "delete", Path: "docs"}); !strings.Contains(r.Error, "refusing to delete a root") {
		t.Fatalf("delete a root by name: %+v", r)
	}
	// Two roots of one name cannot be told apart: refused.
	twin := filepath.Join(base, "other", "notes")
	if err := os.MkdirAll(twin, 0o755); err != nil {
		t.Fatal(err)
	}
	r := call(t, tools.Config{AllowedPaths: []string{notes, twin}}, Files{Op: "read", Path: "notes/hello.txt"})
	if !strings.Contains(r.Error, "misconfigured") || strings.Contains(r.Error, base) {
		t.Fatalf("twin roots: %+v", r)
	}
}

// TestFilesNonRegularNeverBlocks: reads and writes of a FIFO or a socket
// inside a root are refused at once; 20 concurrent reads of a FIFO nobody
// writes to all answer promptly (they used to hold their handler slots
// until the FIFO was fed).
func TestFilesNonRegularNeverBlocks(t *testing.T) {
	root := t.TempDir()
	fifo := filepath.Join(root, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(root, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := os.Symlink("fifo", filepath.Join(root, "to-fifo")); err != nil {
		t.Fatal(err)
	}
	c := tools.Config{AllowedPaths: []string{root}}

	const n = 20
	errs := make(chan string, n)
	for range n {
		go func() {
			resp, err := (&Tool{Policy: tools.Fixed(c)}).Handle(context.Background(), &Files{Op: "read", Path: "fifo"},
				xmlpipe.Metadata{From: "agent"})
			if err != nil {
				errs <- err.Error()
				return
			}
			errs <- resp.(*xmlpipe.RespondResponse).Payload.(*FilesResult).Error
		}()
	}
	deadline := time.After(10 * time.Second)
	for i := range n {
		select {
		case e := <-errs:
			if !strings.Contains(e, "not a regular file") || strings.Contains(e, root) {
				t.Errorf("read %d: error %q", i, e)
			}
		case <-deadline:
			// Unblock the stuck readers so the test process can end.
			if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
				_ = w.Close()
			}
			t.Fatalf("only %d of %d FIFO reads answered within 10s", i, n)
		}
	}
	for _, tc := range []Files{
		{Op: "read", Path: "to-fifo"},
		{Op: "read", Path: "sock"},
		{Op: "write", Path: "fifo", Content: "x"},
		{Op: "write", Path: "fifo", Content: "x", Append: true},
		{Op: "write", Path: "to-fifo", Content: "x"},
		{Op: "write", Path: "sock", Content: "x"},
	} {
		done := make(chan *FilesResult, 1)
		go func() { done <- call(t, c, tc) }()
		select {
		case r := <-done:
			if !strings.Contains(r.Error, "not a regular file") {
				t.Errorf("%+v: %+v", tc, r)
			}
		case <-time.After(10 * time.Second):
			if r, err := os.OpenFile(fifo, os.O_RDWR, 0); err == nil {
				_ = r.Close()
			}
			t.Fatalf("%+v blocked", tc)
		}
	}
	// Deleting a FIFO is fine (unlink never blocks).
	if r := call(t, c, Files{Op: "delete", Path: "fifo"}); r.Error != "" {
		t.Fatalf("delete fifo: %+v", r)
	}
}

func TestCheckRoots(t *testing.T) {
	base := t.TempDir()
	data := filepath.Join(base, "data")
	notes := filepath.Join(base, "notes")
	file := filepath.Join(base, "file.txt")
	for _, d := range []string{data, notes, filepath.Join(data, "keys")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(data, filepath.Join(base, "data-link")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		paths []string
		want  string
	}{
		{"ok", []string{notes}, ""},
		{"none", nil, ""},
		{"missing", []string{filepath.Join(base, "nope")}, "does not exist"},
		{"a file", []string{file}, "is not a directory"},
		{"the data directory", []string{data}, "data directory"},
		{"inside it", []string{filepath.Join(data, "keys")}, "data directory"},
		{"containing it", []string{base}, "data directory"},
		{"a symlink to it", []string{filepath.Join(base, "data-link")}, "data directory"},
		{"the filesystem root", []string{"/"}, "named directory"},
		{"twins", []string{notes, filepath.Join(data, "..", "notes")}, "both named"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tools.Config{AllowedPaths: tc.paths, DataDir: data})
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
	// The call refuses a root overlapping the data directory too (a policy
	// built in code skips the load-time check).
	if r := call(t, tools.Config{AllowedPaths: []string{data}, DataDir: data}, Files{Op: "read", Path: "keys"}); !strings.Contains(r.Error, "data directory") ||
		strings.Contains(r.Error, base) {
		t.Fatalf("data directory at call time: %+v", r)
	}
}

// agentInput is what an LLM agent takes: text.
type agentInput struct{ Text string }

// TestFilesReadAnswerFitsTheSizeCap: a read within max_bytes whose text XML
// or JSON escapes many times over is refused with a clear error instead of
// an answer the pump rejects as over its message size cap; what fits is
// answered whole, to a console and to an agent (which gets JSON as text).
func TestFilesReadAnswerFitsTheSizeCap(t *testing.T) {
	root := t.TempDir()
	agentType, err := xmlpipe.PayloadTypeOf[agentInput]()
	if err != nil {
		t.Fatal(err)
	}
	resultType, err := xmlpipe.PayloadTypeOf[FilesResult]()
	if err != nil {
		t.Fatal(err)
	}
	callers := tools.CallersFunc(func(name string) (*xmlpipe.PayloadType, bool) {
		if name == "agent" {
			return agentType, true
		}
		return nil, false
	})
	c := tools.Config{AllowedPaths: []string{root}}
	for _, tc := range []struct {
		name, content string
		refused       bool
	}{
		{name: "plain text at max_bytes", content: strings.Repeat("a", DefaultMaxBytes)},
		{name: "some markup", content: strings.Repeat("<p>a &amp; b</p>\n", DefaultMaxBytes/17)},
		{name: "ampersands", content: strings.Repeat("&", DefaultMaxBytes), refused: true},
		{name: "angle brackets", content: strings.Repeat("<>", DefaultMaxBytes/2), refused: true},
		{name: "quotes and line ends", content: strings.Repeat("\"'\\\t\n", DefaultMaxBytes/5)},
		{name: "carriage returns", content: strings.Repeat("\r", DefaultMaxBytes), refused: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(filepath.Join(root, "f.txt"), []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, from := range []string{"console", "agent"} {
				p := &Files{Op: "read", Path: "f.txt"}
				resp, err := (&Tool{Policy: tools.Fixed(c), Callers: callers}).Handle(context.Background(), p,
					xmlpipe.Metadata{From: from})
				if err != nil {
					t.Fatal(err)
				}
				payload := resp.(*xmlpipe.RespondResponse).Payload
				pt := resultType
				if from == "agent" {
					pt = agentType
				}
				b, err := pt.AppendPayload(nil, payload)
				if err != nil {
					t.Fatal(err)
				}
				if len(b) >= stage.DefaultMaxBytes {
					t.Errorf("%s: the answer is %d bytes, over the %d-byte message cap", from, len(b), stage.DefaultMaxBytes)
				}
				if from != "console" {
					continue
				}
				r := payload.(*FilesResult)
				switch {
				case tc.refused && !strings.Contains(r.Error, "as an answer carries it"):
					t.Errorf("error = %q, want a refusal saying the answer would be too large", r.Error)
				case !tc.refused && (r.Error != "" || r.Content != tc.content):
					t.Errorf("error = %q, content of %d bytes; want the %d bytes", r.Error, len(r.Content), len(tc.content))
				}
			}
		})
	}
}
