package command

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/tools"
	"golang.org/x/sys/unix"
)

// TestRunCommandKillsBackgroundChildren runs a script that leaves a child
// in the background and exits at once: the call must end without waiting
// for the timeout, and the child must be gone when it does.
func TestRunCommandKillsBackgroundChildren(t *testing.T) {
	root := t.TempDir()
	openDirs(t, root)
	tests := []struct {
		name, script string
	}{
		{"output redirected", "sleep 300 >/dev/null 2>&1 &\necho $!\n"},
		{"holding the output pipes", "sleep 300 &\necho $!\n"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := "bg" + strconv.Itoa(i) + ".sh"
			if err := os.WriteFile(filepath.Join(root, file), []byte(tt.script), 0o644); err != nil {
				t.Fatal(err)
			}
			c := tools.Config{AllowedCommands: cmds("sh {file}"), AllowedPaths: []string{root},
				Timeout: time.Minute, RunAs: runAs()}
			r := call(t, c, RunCommand{Command: "sh", Args: []string{file}})
			if r.Error != "" || r.TimedOut || r.ExitCode != 0 {
				t.Fatalf("result %+v: want a clean exit before the timeout", r)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(r.Stdout))
			if err != nil {
				t.Fatalf("stdout %q: want the background child's pid", r.Stdout)
			}
			fd, err := unix.PidfdOpen(pid, 0)
			if errors.Is(err, unix.ESRCH) {
				return // gone and reaped
			}
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(fd)
			// A pidfd becomes readable when its process has exited.
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			for {
				n, err := unix.Poll(fds, int(time.Minute/time.Millisecond))
				if errors.Is(err, unix.EINTR) {
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				if n == 0 {
					_ = unix.Kill(pid, unix.SIGKILL)
					t.Fatalf("background child %d outlived the call", pid)
				}
				return
			}
		})
	}
}
