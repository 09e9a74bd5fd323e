package oob

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"syscall"
)

// Socket errors.
var (
	// ErrSocketDir: the Unix socket's directory can be entered by others, or
	// is not the owner's.
	ErrSocketDir = errors.New("oob: unix socket directory is not private")
	// ErrNotLoopback: a TCP peer that is not on this machine.
	ErrNotLoopback = errors.New("oob: non-loopback peer")
)

// isLoopbackHost reports whether host is "localhost" or a loopback IP.
func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// listenUnix creates the Unix socket at path, mode 0600, in a directory only
// the owner can enter: the directory is created 0700 when missing, and an
// existing one that others may enter (or another user owns) is refused, the
// socket not created. A stale socket file is replaced; any other file is not.
func listenUnix(path string) (net.Listener, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("oob: %w", err)
	}
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("oob: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s has mode %#o (want 0700)", ErrSocketDir, dir, st.Mode().Perm())
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != os.Getuid() {
		return nil, fmt.Errorf("%w: %s belongs to uid %d", ErrSocketDir, dir, sys.Uid)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("oob: %s exists and is not a socket", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("oob: stale socket: %w", err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("oob: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("oob: %w", err)
	}
	return ln, nil
}

// loopbackListener refuses (closes at accept) every peer whose address is
// not loopback, logging it as a security event.
type loopbackListener struct {
	net.Listener
	log *slog.Logger
}

// Accept returns the next loopback connection.
func (l *loopbackListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if err := checkLoopback(c.RemoteAddr()); err != nil {
			l.log.Warn("security event: OOB connection refused", "security", true, "remote", c.RemoteAddr().String(),
				"error", err)
			_ = c.Close()
			continue
		}
		return c, nil
	}
}

// checkLoopback is nil for a loopback TCP address.
func checkLoopback(a net.Addr) error {
	if ta, ok := a.(*net.TCPAddr); ok && ta.IP.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrNotLoopback, a)
}
