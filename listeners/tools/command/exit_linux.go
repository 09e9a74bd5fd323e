package command

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// awaitExit blocks until process pid has exited (or was killed) without
// reaping it: until it is reaped its pid, which is also its process
// group's id, cannot name another process or group, so the group can be
// killed safely afterwards.
func awaitExit(pid int) {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return
		}
	}
}

// isolate puts the program, when the organism runs as root, in a PID
// namespace of its own, where it is process 1: when it exits, or is
// killed, the kernel kills every process it started, also one that left
// its process group (setsid). Without root a new PID namespace needs a
// user namespace, which many hosts disable: the process group kill is
// then all there is.
func isolate(a *syscall.SysProcAttr) {
	if os.Geteuid() == 0 {
		a.Cloneflags |= syscall.CLONE_NEWPID
	}
}
