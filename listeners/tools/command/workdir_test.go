//go:build linux

package command

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// runDirs lists the names in dir that begin as run_command's do.
func runDirs(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), runPrefix) {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out
}

// TestStaleRunDirSwept: an organism killed with SIGKILL during a
// run_command call leaves its working directory behind; the next
// organism's sweep removes it — and its lock file — while the directory
// of a live organism (its lock held), another user's older kind of
// directory and anything else are left alone.
func TestStaleRunDirSwept(t *testing.T) {
	if os.Getenv(organismEnv) != "" {
		t.Skip("the organism of the test, not the test")
	}
	tmp := t.TempDir()
	openDirs(t, tmp)
	seconds := strconv.Itoa(400000 + os.Getpid()%10000*10)
	organism := exec.Command(os.Args[0], "-test.run=^TestOrganismMakingACall$", "-test.count=1", "-test.timeout=2m")
	organism.Env = append(os.Environ(), organismEnv+"="+seconds, "TMPDIR="+tmp)
	out, err := organism.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	organism.Stderr = os.Stderr
	if err := organism.Start(); err != nil {
		t.Fatal(err)
	}
	defer organism.Wait()
	defer organism.Process.Kill()
	lines := bufio.NewScanner(out)
	var pid int
	for lines.Scan() {
		if rest, ok := strings.CutPrefix(lines.Text(), "running "); ok {
			pid, _ = strconv.Atoi(rest)
			break
		}
		if rest, ok := strings.CutPrefix(lines.Text(), "failed: "); ok {
			t.Fatalf("the organism: %s", rest)
		}
	}
	if pid == 0 {
		t.Fatalf("the organism never said its program runs (%v)", lines.Err())
	}
	if err := organism.Process.Signal(unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = organism.Wait()
	awaitGone(t, pid)
	stale := runDirs(t, tmp)
	if len(stale) != 2 {
		t.Fatalf("after the kill %s holds %v, want the call's directory and its lock file", tmp, stale)
	}

	// A live organism's: its lock held (here by this process, as another
	// organism's would be).
	live, liveLock, err := lockToken(tmp)
	if err != nil {
		t.Fatal(err)
	}
	defer liveLock.Close()
	liveDir, err := os.MkdirTemp(tmp, runPrefix+live+"-")
	if err != nil {
		t.Fatal(err)
	}
	// An older xmlpipe's: no mark says whether its owner lives.
	if err := os.Mkdir(filepath.Join(tmp, runPrefix+"123456789"), 0o700); err != nil {
		t.Fatal(err)
	}
	want := runDirs(t, tmp)
	want = slices.DeleteFunc(want, func(n string) bool { return slices.Contains(stale, n) })

	own, ownLock, err := lockToken(tmp)
	if err != nil {
		t.Fatal(err)
	}
	defer ownLock.Close()
	want = append(want, runPrefix+own+lockSuffix)
	slices.Sort(want)
	n, err := sweep(tmp, own)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("swept %d directories, want the killed organism's 1", n)
	}
	if diff := cmp.Diff(want, runDirs(t, tmp)); diff != "" {
		t.Errorf("left after the sweep (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(liveDir); err != nil {
		t.Errorf("the live organism's directory: %v", err)
	}
}
