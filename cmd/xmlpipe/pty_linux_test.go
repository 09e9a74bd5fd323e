package main

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// openPTY returns the controller and the terminal side of a new pseudo-terminal.
func openPTY(t *testing.T) (ptmx, tty *os.File) {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { ptmx.Close() })
	fd := int(ptmx.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("ptsname: %v", err)
	}
	tty, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open tty: %v", err)
	}
	t.Cleanup(func() { tty.Close() })
	return ptmx, tty
}

// ptyScreen collects what the console writes to the terminal.
type ptyScreen struct {
	mu      sync.Mutex
	text    strings.Builder
	changed chan struct{}
}

func (s *ptyScreen) read(ptmx *os.File) {
	buf := make([]byte, 4096)
	for {
		n, err := ptmx.Read(buf)
		s.mu.Lock()
		s.text.Write(buf[:n])
		s.mu.Unlock()
		select {
		case s.changed <- struct{}{}:
		default:
		}
		if err != nil {
			return
		}
	}
}

func (s *ptyScreen) waitFor(t *testing.T, want string) {
	t.Helper()
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for {
		s.mu.Lock()
		got := s.text.String()
		s.mu.Unlock()
		if strings.Contains(got, want) {
			return
		}
		select {
		case <-s.changed:
		case <-timeout.C:
			t.Fatalf("%q never appeared on the terminal:\n%q", want, got)
		}
	}
}

// TestConsoleTerminal runs the console on a real pseudo-terminal: raw mode,
// line editing, the greeting, Ctrl-D to leave, and the terminal's modes
// restored on exit.
func TestConsoleTerminal(t *testing.T) {
	ptmx, tty := openPTY(t)
	if err := unix.IoctlSetWinsize(int(tty.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 100}); err != nil {
		t.Fatalf("set window size: %v", err)
	}
	before, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatalf("get termios: %v", err)
	}
	cmd := exec.Command(binary, "console", "organism.yaml")
	cmd.Dir = helloDir(t)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	scr := &ptyScreen{changed: make(chan struct{}, 1)}
	go scr.read(ptmx)

	scr.waitFor(t, "Type /help for commands")
	scr.waitFor(t, "> ")
	if _, err := ptmx.WriteString("@greeter Dna\x7f\x7fan\r"); err != nil {
		t.Fatal(err)
	}
	scr.waitFor(t, "[shouter] HELLO, DAN!\r\n")
	if _, err := ptmx.WriteString("\x04"); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("console on a terminal: %v", err)
	}
	after, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatalf("get termios: %v", err)
	}
	if diff := cmp.Diff(*before, *after); diff != "" {
		t.Errorf("terminal modes not restored (-before +after):\n%s", diff)
	}
}
