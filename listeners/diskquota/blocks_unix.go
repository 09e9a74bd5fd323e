//go:build unix

package diskquota

import (
	"io/fs"
	"syscall"
)

// allocated is the disk the file fi describes takes, as its st_blocks
// (512-byte units) report it; 0 when fi carries no status.
func allocated(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int64(st.Blocks) * 512
	}
	return 0
}
