package tools

import (
	"os"
	"syscall"
)

// HardLinked reports whether fi is a regular file with more than one hard
// link. The tools never make one, so another name is someone else's,
// possibly for a file outside every root — which os.Root cannot tell, since
// a hard link is the file itself: files and run_command's {file} refuse it.
func HardLinked(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && fi.Mode().IsRegular() && st.Nlink > 1
}
