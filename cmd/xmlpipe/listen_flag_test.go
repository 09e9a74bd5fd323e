package main

import (
	"strings"
	"testing"
)

// TestListenFlagCheckedFirst: a --listen that is no host:port, or that
// --insecure-dev may not serve on, is a usage error (exit 2) said before
// anything is built — no log line of the organism, no "no user can log in".
func TestListenFlagCheckedFirst(t *testing.T) {
	dir := helloDir(t)
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"run, no port", []string{"run", "--listen", "nohost", "organism.yaml"}, `xmlpipe run: --listen "nohost": not host:port`},
		{"run insecure, no port", []string{"run", "--insecure-dev", "--listen", "nohost", "organism.yaml"}, `xmlpipe run: --listen "nohost": not host:port`},
		{"run, bad port", []string{"run", "--listen", "127.0.0.1:http2x", "organism.yaml"}, `xmlpipe run: --listen "127.0.0.1:http2x": port`},
		{"run, port out of range", []string{"run", "--listen", ":70000", "organism.yaml"}, `xmlpipe run: --listen ":70000": port`},
		{"run insecure beyond loopback", []string{"run", "--insecure-dev", "--listen", "0.0.0.0:8765", "organism.yaml"},
			`xmlpipe run: --listen "0.0.0.0:8765": refusing to serve insecurely beyond this machine`},
		{"console --serve, no port", []string{"console", "--serve", "--listen", "nohost", "organism.yaml"}, `xmlpipe console: --listen "nohost": not host:port`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := runBinary(t, dir, "", tt.args...)
			if r.code != exitUsage || !strings.HasPrefix(r.stderr, tt.want) || strings.Contains(r.stderr, "level=") {
				t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s\nwant exit %d and stderr beginning %q, no log line", r.code, r.stdout, r.stderr, exitUsage, tt.want)
			}
		})
	}
}
