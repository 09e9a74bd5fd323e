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

// isolate ties the program's life to the organism's and, when the
// organism runs as root, puts it in a PID namespace of its own.
//
// The kernel kills the program when the organism dies (Pdeathsig), also
// by kill -9 or a crash, which cancel no context: otherwise a call killed
// with its organism would run on beside the same call re-delivered after
// the restart. (The signal follows the thread that started the program;
// the Go runtime ends a thread only when a goroutine locked to it exits,
// which nothing starting programs does.)
//
// In its own PID namespace the program is process 1: when it exits, or is
// killed, the kernel kills every process it started, also one that left
// its process group (setsid). Without root a new PID namespace needs a
// user namespace, which many hosts disable: the process group kill is
// then all there is, and what the program started in the background
// outlives an organism killed with -9.
func isolate(a *syscall.SysProcAttr) {
	a.Pdeathsig = syscall.SIGKILL
	if os.Geteuid() == 0 {
		a.Cloneflags |= syscall.CLONE_NEWPID
	}
}
