package main

import (
	"fmt"
	"net"
	"strconv"
)

// checkListen checks a --listen address before anything is built, so a
// typo is a usage error said at once (the socket is opened only once the
// organism is assembled): it must be host:port with a port of 0 to 65535,
// and with --insecure-dev its host a loopback one. "" (no --listen) is
// fine.
func checkListen(addr string, insecure bool) error {
	if addr == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--listen %q: not host:port (as 127.0.0.1:8765, [::1]:8765 or :8765): %w", addr, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("--listen %q: port %q is not a number from 0 to 65535", addr, port)
	}
	if insecure && !loopbackHost(host) {
		return fmt.Errorf("--listen %q: %w: --insecure-dev serves without TLS or login, so only on a loopback "+
			"address (127.0.0.1, ::1, localhost)", addr, errInsecureAddr)
	}
	return nil
}
