//go:build !linux

package command

// awaitExit returns at once where waitid(WNOWAIT) is not available: the
// process group is then killed only at the timeout or on cancellation.
func awaitExit(int) {}
