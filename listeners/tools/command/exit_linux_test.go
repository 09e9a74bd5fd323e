package command

import (
	"bytes"
	"errors"
	"fmt"
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
// behind and exits at once: the call must end without waiting for the
// timeout, and the child must be gone when it does — also one that left
// the process group with setsid, when the organism runs as root (a PID
// namespace per call).
func TestRunCommandKillsBackgroundChildren(t *testing.T) {
	root := t.TempDir()
	openDirs(t, root)
	// Each child sleeps for a length of its own, which finds it among the
	// host's processes: inside a PID namespace $! is not its host pid.
	base := 200000 + os.Getpid()%10000*10
	tests := []struct {
		name, script string
		needsRoot    bool
	}{
		{"output redirected", "sleep %d >/dev/null 2>&1 &\n", false},
		{"holding the output pipes", "sleep %d &\n", false},
		// The script waits until the child has left its group: a flag file
		// the child writes once it runs in a session of its own.
		{"leaving the group", "setsid sh -c 'touch left; exec sleep %d' >/dev/null 2>&1 </dev/null &\n" +
			"while [ ! -e left ]; do sleep 0.01; done\n", true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.needsRoot && os.Geteuid() != 0 {
				t.Skip("a PID namespace per call needs root")
			}
			seconds := base + i
			file := "bg" + strconv.Itoa(i) + ".sh"
			if err := os.WriteFile(filepath.Join(root, file), fmt.Appendf(nil, tt.script, seconds), 0o644); err != nil {
				t.Fatal(err)
			}
			c := tools.Config{AllowedCommands: cmds("sh {file}"), AllowedPaths: []string{root},
				Timeout: time.Minute, RunAs: runAs()}
			r := call(t, c, RunCommand{Command: "sh", Args: []string{file}})
			if r.Error != "" || r.TimedOut || r.ExitCode != 0 {
				t.Fatalf("result %+v: want a clean exit before the timeout", r)
			}
			for _, pid := range processesRunning(t, "sleep", strconv.Itoa(seconds)) {
				awaitGone(t, pid)
			}
		})
	}
}

// processesRunning returns the pids of the host's processes whose command
// line is argv.
func processesRunning(t *testing.T, argv ...string) []int {
	t.Helper()
	want := []byte(strings.Join(argv, "\x00") + "\x00")
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline")); err == nil && bytes.Equal(b, want) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// awaitGone waits (at most a minute) for process pid to exit, and fails
// the test — killing it — if it does not.
func awaitGone(t *testing.T, pid int) {
	t.Helper()
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
			t.Fatalf("child %d outlived the call", pid)
		}
		return
	}
}
