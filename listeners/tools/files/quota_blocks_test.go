package files

import (
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/xml-pipeline/xmlpipe/listeners/diskquota"
	"github.com/xml-pipeline/xmlpipe/listeners/tools"
)

// block is what a file's content counts in (diskquota.Content).
const block = diskquota.BlockBytes

// realDisk is the disk the tree under dir takes: the st_blocks of
// everything under it (dir itself excluded), each inode once.
func realDisk(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	seen := map[uint64]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		if !seen[st.Ino] {
			seen[st.Ino] = true
			n += st.Blocks * 512
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestDiskQuotaBoundsRealDisk: max_disk_bytes bounds the disk a root
// really takes: one-byte files (a 4 KiB block each on disk) written and
// appended to until refused leave the root within the cap. Before, each
// counted 257 bytes, so a 1 MiB cap let ~4,000 of them take ~16 MiB.
func TestDiskQuotaBoundsRealDisk(t *testing.T) {
	const q = 1 << 20
	for _, appendTo := range []bool{false, true} {
		t.Run("append "+strconv.FormatBool(appendTo), func(t *testing.T) {
			root := t.TempDir()
			tool := &Tool{Policy: tools.Fixed(tools.Config{AllowedPaths: []string{root}, MaxBytes: q, MaxDiskBytes: q})}
			name := filepath.Base(root)
			refused := false
			for i := 0; i < 10000 && !refused; i++ {
				p := Files{Op: "write", Path: name + "/f" + strconv.Itoa(i), Content: "x"}
				if appendTo && i > 0 {
					// one byte more to the first file, across a block boundary now and then
					p = Files{Op: "write", Path: name + "/f0", Content: strings.Repeat("y", 1000), Append: true}
					if i%2 == 0 {
						p = Files{Op: "write", Path: name + "/g" + strconv.Itoa(i), Content: "x"}
					}
				}
				r := callTool(t, tool, p)
				switch {
				case r.Error == "":
				case strings.Contains(r.Error, ErrDiskQuota.Error()):
					refused = true
				default:
					t.Fatalf("write %d: %s", i, r.Error)
				}
			}
			if !refused {
				t.Fatal("10000 writes fitted a 1 MiB cap")
			}
			real := realDisk(t, root)
			t.Logf("real disk at the cap: %d bytes (max_disk_bytes %d)", real, q)
			if real > q {
				t.Errorf("the root takes %d bytes of disk (st_blocks), past max_disk_bytes %d", real, q)
			}
		})
	}
}

// TestDiskQuotaCountsDirectoryGrowth: a root holding many long names takes
// blocks of its own for them, kept after they go; the figure counts them
// as they grow, so it stays what a fresh count finds.
func TestDiskQuotaCountsDirectoryGrowth(t *testing.T) {
	root := t.TempDir()
	tool := &Tool{Policy: tools.Fixed(tools.Config{AllowedPaths: []string{root}, MaxDiskBytes: 4 << 20})}
	name := filepath.Base(root)
	check := func(when string) {
		t.Helper()
		want, err := diskquota.Count(root)
		if err != nil {
			t.Fatal(err)
		}
		d := rootDir(t, root)
		d.Lock()
		got := d.Used()
		d.Unlock()
		if got != want {
			t.Errorf("%s: the figure is %d; the root holds %d", when, got, want)
		}
	}
	long := strings.Repeat("n", 200)
	for i := range 200 {
		if r := callTool(t, tool, Files{Op: "write", Path: name + "/" + long + strconv.Itoa(i), Content: "x"}); r.Error != "" {
			t.Fatalf("write %d: %s", i, r.Error)
		}
	}
	check("after 200 long names")
	for i := range 200 {
		if r := callTool(t, tool, Files{Op: "delete", Path: name + "/" + long + strconv.Itoa(i)}); r.Error != "" {
			t.Fatalf("delete %d: %s", i, r.Error)
		}
	}
	check("after they went")
}
