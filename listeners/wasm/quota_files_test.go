package wasm

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/diskquota"
	"github.com/xml-pipeline/xmlpipe/listeners/tools"
	"github.com/xml-pipeline/xmlpipe/listeners/tools/files"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestDiskQuotaSharedWithFiles: a WASM guest and the files tool writing
// into one directory at once, each capping it at the same max_disk_bytes,
// see each other's writes as they are made (one figure for the directory,
// updated by both): together they fill it to the quota and no further, and
// the figure is what counting the directory finds.
func TestDiskQuotaSharedWithFiles(t *testing.T) {
	const q, size = 32 << 10, 1000
	dir := t.TempDir()
	m := compileGuest(t, "ops", Reactor, Sandbox{Dir: dir, DirWritable: true, MaxDiskBytes: q, Timeout: time.Minute})
	ft := &files.Tool{Policy: tools.Fixed(tools.Config{AllowedPaths: []string{dir}, MaxDiskBytes: q})}
	content := strings.Repeat("x", size)
	var wg sync.WaitGroup
	wg.Go(func() { // the files tool writes until refused
		for i := range q / size {
			resp, err := ft.Handle(context.Background(), &files.Files{Op: "write", Path: "f" + strconv.Itoa(i), Content: content},
				xmlpipe.Metadata{From: "agent"})
			if err != nil {
				t.Error(err)
				return
			}
			switch e := resp.(*xmlpipe.RespondResponse).Payload.(*files.FilesResult).Error; {
			case strings.Contains(e, files.ErrDiskQuota.Error()):
				return
			case e != "":
				t.Errorf("files write f%d: %s", i, e)
				return
			}
		}
		t.Error("the files tool alone wrote the whole quota's worth")
	})
	refused := false
	for i := 0; i < q/size && !refused; i++ { // the guest writes until refused
		r := runOp(t, m, "write", "/data/g"+strconv.Itoa(i), content)
		switch {
		case r.refused(ioErr):
			refused = true
		case !r.OK:
			t.Fatalf("guest write g%d: %q", i, r.Error)
		}
	}
	wg.Wait()
	if !refused {
		t.Error("the guest alone wrote the whole quota's worth")
	}
	used, err := diskquota.Count(dir)
	if err != nil {
		t.Fatal(err)
	}
	if used > q {
		t.Errorf("the directory holds %d bytes, over the %d-byte quota they share", used, q)
	}
	if got := m.dir.diskUsed(); got != used {
		t.Errorf("the figure is %d bytes; the directory holds %d", got, used)
	}
}

// TestDiskQuotaStaleCountedBeforeACall: once the directory's figure is
// marked stale (a run_command program that may have written there ended),
// the next call counts it before the guest changes anything: what was
// added meanwhile is counted against the quota.
func TestDiskQuotaStaleCountedBeforeACall(t *testing.T) {
	const q = 4 * block
	dir := t.TempDir()
	m := compileGuest(t, "ops", Reactor, Sandbox{Dir: dir, DirWritable: true, MaxDiskBytes: q, Timeout: time.Minute})
	if r := runOp(t, m, "write", "/data/a", "0123456789"); !r.OK {
		t.Fatalf("write a: %q", r.Error)
	}
	if err := os.WriteFile(filepath.Join(dir, "by-a-program"), []byte(strings.Repeat("x", 3000)), 0o644); err != nil {
		t.Fatal(err)
	}
	diskquota.Invalidate(dir) // as run_command does when a program ends
	if r := runOp(t, m, "write", "/data/b", strings.Repeat("y", 1000)); !r.refused(ioErr) {
		t.Errorf("a write past what is left: %+v, want %q", r, ioErr)
	}
	checkCount(t, m, dir, q)
}

// TestDiskQuotaSmallestCapOfTheWriters: a directory written by the files
// tool and by a WASM guest with different max_disk_bytes holds at most the
// smaller, whichever writer has it: the guest's binds the files tool from
// the module's build, the files tool's binds the guest from its first
// write there.
func TestDiskQuotaSmallestCapOfTheWriters(t *testing.T) {
	const small, large, size = 8 << 10, 32 << 10, 1000
	content := strings.Repeat("x", size)
	for _, tc := range []struct {
		name               string
		filesCap, guestCap int
	}{
		{name: "files smaller", filesCap: small, guestCap: large},
		{name: "guest smaller", filesCap: large, guestCap: small},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			m := compileGuest(t, "ops", Reactor, Sandbox{Dir: dir, DirWritable: true, MaxDiskBytes: tc.guestCap, Timeout: time.Minute})
			ft := &files.Tool{Policy: tools.Fixed(tools.Config{AllowedPaths: []string{dir}, MaxDiskBytes: tc.filesCap})}
			filesWrite := func(name string) string {
				t.Helper()
				resp, err := ft.Handle(context.Background(), &files.Files{Op: "write", Path: name, Content: content},
					xmlpipe.Metadata{From: "agent"})
				if err != nil {
					t.Fatal(err)
				}
				return resp.(*xmlpipe.RespondResponse).Payload.(*files.FilesResult).Error
			}
			if e := filesWrite("first"); e != "" {
				t.Fatalf("the files tool's first write: %s", e)
			}
			guestRefused, filesRefused := false, ""
			for i := 0; i < large/size && !guestRefused; i++ {
				r := runOp(t, m, "write", "/data/g"+strconv.Itoa(i), content)
				switch {
				case r.refused(ioErr):
					guestRefused = true
				case !r.OK:
					t.Fatalf("guest write g%d: %q", i, r.Error)
				}
			}
			for i := 0; i < large/size && filesRefused == ""; i++ {
				filesRefused = filesWrite("f" + strconv.Itoa(i))
			}
			if !guestRefused || !strings.Contains(filesRefused, files.ErrDiskQuota.Error()) {
				t.Errorf("guest refused %v, files refused %q; want both refused at the smaller cap", guestRefused, filesRefused)
			}
			used, err := diskquota.Count(dir)
			if err != nil {
				t.Fatal(err)
			}
			if used > small {
				t.Errorf("the directory holds %d bytes, over the smaller cap (%d) of its writers", used, int64(small))
			}
		})
	}
}
