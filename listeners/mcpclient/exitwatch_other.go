//go:build !linux

package mcpclient

// watchExit does nothing where the server's exit cannot be observed
// without reaping it: its group is killed when its connection closes.
func watchExit(int) {}
