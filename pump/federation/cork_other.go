//go:build !linux

package federation

import "syscall"

// setCork does nothing where TCP_CORK is not known: each message leaves
// as it is written.
func setCork(syscall.RawConn, bool) {}
