package federation

import "syscall"

// setCork sets or clears TCP_CORK on raw; a failure only costs segments.
func setCork(raw syscall.RawConn, on bool) {
	v := 0
	if on {
		v = 1
	}
	_ = raw.Control(func(fd uintptr) {
		_ = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_CORK, v)
	})
}
