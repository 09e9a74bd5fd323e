package wasm

import (
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"golang.org/x/sys/unix"
)

// futimens sets the access and modification times of the open file fd
// (utimensat with AT_EMPTY_PATH); UTIME_OMIT leaves one unchanged.
func futimens(fd int, atim, mtim int64) error {
	ts := []unix.Timespec{timespec(atim), timespec(mtim)}
	return ignoringEINTR(func() error { return unix.UtimesNanoAt(fd, "", ts, unix.AT_EMPTY_PATH) })
}

func timespec(ns int64) unix.Timespec {
	if ns == experimentalsys.UTIME_OMIT {
		return unix.Timespec{Nsec: unix.UTIME_OMIT}
	}
	return unix.NsecToTimespec(ns)
}
