package command

import (
	"errors"

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
