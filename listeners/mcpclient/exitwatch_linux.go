package mcpclient

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// watchExit kills the process group pgid as soon as its leader, the server,
// exits. A child that inherited the server's stdout would otherwise keep
// the connection open after the server is gone: the mount would take the
// dead server for a live one, every call waiting for its timeout. Killed,
// the child closes the pipe, the connection ends, and the server is
// restarted. The exit is observed without reaping the server (WNOWAIT:
// the SDK's Wait reaps it), so pgid cannot name another group meanwhile.
func watchExit(pgid int) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pgid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err == unix.EINTR {
			continue
		}
		if err == nil {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
		return
	}
}
