package wasm

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

// TestForeignHardLinksRefused: a hard link someone else made inside dir
// to a file outside it is neither read nor written through, on a writable
// mount or a read-only one, and the guest makes none itself.
func TestForeignHardLinksRefused(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "wdata")
	outside := filepath.Join(base, "secret")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(outside, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "mine"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(outside, filepath.Join(dir, "hl")); err != nil {
		t.Skip("no hard links here:", err)
	}
	for _, writable := range []bool{true, false} {
		m := compileGuest(t, "ops", Reactor, Sandbox{Dir: dir, DirWritable: writable, Timeout: time.Minute})
		changeErr := "permission denied"
		if !writable {
			changeErr = "read-only file system"
		}
		steps := []struct {
			do, path, arg, errHas string
		}{
			{"read", "/data/hl", "", "permission denied"},
			{"write", "/data/hl", "overwritten", changeErr},
			{"append", "/data/hl", "appended", changeErr},
			{"truncate", "/data/hl", "0", changeErr},
		}
		if writable {
			steps = append(steps, struct{ do, path, arg, errHas string }{"link", "/data/mine", "/data/mine2", "not permitted"})
		}
		for _, s := range steps {
			if r := runOp(t, m, s.do, s.path, s.arg); !r.refused(s.errHas) || strings.Contains(r.Result, "secret") {
				t.Errorf("writable %v: %s %s: %+v, want a refusal with %q", writable, s.do, s.path, r, s.errHas)
			}
		}
		if r := runOp(t, m, "read", "/data/mine", ""); !r.OK || r.Result != "mine" {
			t.Errorf("writable %v: read mine: %+v", writable, r)
		}
	}
	if b, err := os.ReadFile(outside); err != nil || string(b) != "secret" {
		t.Errorf("the file outside: %q, %v", b, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "mine2")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the guest made a hard link: %v", err)
	}
}

// TestForeignHardLinksKeepTheirTimes: setting a file's times by path (WASI
// path_filestat_set_times, and fd_filestat_set_times when the descriptor
// cannot) through a hard link someone else made inside dir would change the
// file outside it: refused, as opening it is.
func TestForeignHardLinksKeepTheirTimes(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "wdata")
	outside := filepath.Join(base, "secret")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(outside, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "mine"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(outside, filepath.Join(dir, "hl")); err != nil {
		t.Skip("no hard links here:", err)
	}
	before, err := os.Stat(outside)
	if err != nil {
		t.Fatal(err)
	}
	r, err := openRootFS(dir, false, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	when := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC).UnixNano()
	if errno := r.Utimens("hl", when, when); errno != experimentalsys.EACCES {
		t.Errorf("Utimens through the hard link: errno %v, want EACCES", errno)
	}
	if after, err := os.Stat(outside); err != nil || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("the file outside: modified %v, was %v (%v)", after.ModTime(), before.ModTime(), err)
	}
	if errno := r.Utimens("mine", when, when); errno != 0 {
		t.Errorf("Utimens of the guest's own file: errno %v", errno)
	}
	if fi, err := os.Stat(filepath.Join(dir, "mine")); err != nil || fi.ModTime().UnixNano() != when {
		t.Errorf("the guest's own file: modified %v, want %v (%v)", fi.ModTime(), time.Unix(0, when), err)
	}
}

// TestForeignHardLinksHideTheirStatus: stat (and lstat, which for a hard
// link is the same file) of a regular file with more than one hard link is
// refused with EACCES, as opening it is: its size and times are those of
// the file outside the directory. A file of one link is stat'ed as before,
// and the link can still be removed.
func TestForeignHardLinksHideTheirStatus(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "wdata")
	outside := filepath.Join(base, "secret")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(outside, []byte("a secret of 25 bytes long"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "mine"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(outside, filepath.Join(dir, "hl")); err != nil {
		t.Skip("no hard links here:", err)
	}
	for _, writable := range []bool{false, true} { // the writable pass removes the link last
		m := compileGuest(t, "ops", Reactor, Sandbox{Dir: dir, DirWritable: writable, Timeout: time.Minute})
		for _, do := range []string{"stat", "lstat"} {
			if r := runOp(t, m, do, "/data/hl", ""); !r.refused("permission denied") || strings.Contains(r.Result, "25") {
				t.Errorf("writable %v: %s /data/hl: %+v, want a refusal with permission denied", writable, do, r)
			}
			if r := runOp(t, m, do, "/data/mine", ""); !r.OK || !strings.Contains(r.Result, "4") {
				t.Errorf("writable %v: %s /data/mine: %+v, want its size 4", writable, do, r)
			}
		}
		if writable {
			if r := runOp(t, m, "remove", "/data/hl", ""); !r.OK {
				t.Errorf("remove the link: %+v", r)
			}
		}
	}
	if b, err := os.ReadFile(outside); err != nil || len(b) != 25 {
		t.Errorf("the file outside: %q, %v", b, err)
	}
}
