package console

import (
	"context"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY returns the controller and the terminal side of a new
// pseudo-terminal (the test is skipped where there is none).
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

// Run over piped input whose output is a real terminal announces the wait
// for the conversations still running at the end of the input.
func TestRunAnnouncesWaitOnATerminal(t *testing.T) {
	ptmx, tty := openPTY(t)
	scr := newScreen()
	go func() { _, _ = io.Copy(scr, ptmx) }() // ends when the test closes ptmx
	c, err := New(silent{helloWorld(t)}, Config{LineWait: time.Millisecond, ReplyTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Run(context.Background(), strings.NewReader("@greeter Dan\n"), tty)
	if !errors.Is(err, ErrStillRunning) {
		t.Fatalf("Run: %v, want ErrStillRunning", err)
	}
	scr.waitFor(t, "waiting for 1 conversation (Ctrl-C to stop)…", 1)
}
