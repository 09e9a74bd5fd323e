package mcpclient

import (
	"cmp"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMountStopsTheServersChildren: what a command server starts dies with
// it — when the mount closes, and when the server exits on its own (here
// its "exit" tool) — so that a server's workers (npx's node, a shell's
// jobs) do not outlive it, one more at every restart. The child holds the
// write end of a FIFO the test reads: the read ends when the child is gone.
func TestMountStopsTheServersChildren(t *testing.T) {
	for _, tc := range []struct {
		name string
		// script starts the child ($1 is the FIFO) and then the server ($0).
		script string
		stop   func(t *testing.T, m *Mount, tools map[string]Tool)
	}{
		{name: "close", stop: func(t *testing.T, m *Mount, _ map[string]Tool) {
			if err := m.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
		}},
		{name: "server exits", stop: exitServer},
		// The child holds the server's stdout too: the connection does
		// not end with the server, only with the child.
		{name: "server exits, its child keeps its stdout", script: `/bin/sleep 600 3>"$1" & exec "$0"`, stop: exitServer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(serverEnv, "1")
			fifo := filepath.Join(t.TempDir(), "child")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			gone := make(chan error, 1)
			go func() {
				f, err := os.Open(fifo) // returns once the child has it open
				if err != nil {
					gone <- err
					return
				}
				defer f.Close()
				_, err = io.Copy(io.Discard, f) // ends when the child is gone
				gone <- err
			}()
			m, tools := mount(t, Options{Name: "kids", Env: []string{serverEnv},
				Command: []string{"/bin/sh", "-c", cmp.Or(tc.script, `/bin/sleep 600 >"$1" & exec "$0"`), os.Args[0], fifo},
				Timeout: 20 * time.Second, RestartMin: time.Minute, RestartMax: time.Minute})
			if r := call(t, tools["kids.pid"], `<kids.pid/>`); r.Error != "" {
				t.Fatalf("pid: %+v", r)
			}
			tc.stop(t, m, tools)
			select {
			case err := <-gone:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the server's child outlived it")
			}
		})
	}
}

// exitServer calls the server's exit tool: the call is answered with the
// server's exit.
func exitServer(t *testing.T, _ *Mount, tools map[string]Tool) {
	t.Helper()
	if r := call(t, tools["kids.exit"], `<kids.exit/>`); !strings.Contains(r.Error, "server exited") {
		t.Fatalf("exit: %+v", r)
	}
}
