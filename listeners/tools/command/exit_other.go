//go:build !linux

package command

import "syscall"

// awaitExit returns at once where waitid(WNOWAIT) is not available: the
// process group is then killed only at the timeout or on cancellation.
func awaitExit(int) {}

// isolate does nothing where PID namespaces do not exist.
func isolate(*syscall.SysProcAttr) {}
