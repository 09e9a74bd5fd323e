package command

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/tools"
	"golang.org/x/sys/unix"
)

// organismEnv names, in a re-run of the test binary, the seconds its
// run_command call sleeps (TestRunCommandDiesWithTheOrganism).
const organismEnv = "XMLPIPE_TEST_COMMAND_ORGANISM"

// TestRunCommandDiesWithTheOrganism kills an organism (a re-run of this
// test binary making a run_command call) with SIGKILL while its program
// runs: the program must die with it, not run on beside the call the
// restarted organism makes again.
func TestRunCommandDiesWithTheOrganism(t *testing.T) {
	if os.Getenv(organismEnv) != "" {
		t.Skip("the organism of the test, not the test")
	}
	seconds := strconv.Itoa(300000 + os.Getpid()%10000*10)
	organism := exec.Command(os.Args[0], "-test.run=^TestOrganismMakingACall$", "-test.count=1", "-test.timeout=2m")
	organism.Env = append(os.Environ(), organismEnv+"="+seconds)
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
	if err := organism.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	awaitGone(t, pid)
}

// TestOrganismMakingACall is the organism of
// TestRunCommandDiesWithTheOrganism: its run_command call runs a script
// that says it started through a FIFO and then sleeps; the organism says
// "running <pid>" and is killed meanwhile.
func TestOrganismMakingACall(t *testing.T) {
	seconds := os.Getenv(organismEnv)
	if seconds == "" {
		t.Skip("run by TestRunCommandDiesWithTheOrganism")
	}
	root := t.TempDir()
	openDirs(t, root)
	fifo := filepath.Join(root, "started")
	if err := unix.Mkfifo(fifo, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(fifo, 0o666); err != nil { // past the umask, for nobody
		t.Fatal(err)
	}
	// The program runs in a directory of its own: the FIFO by its path.
	script := "echo started > " + fifo + "\nexec sleep " + seconds + "\n"
	if err := os.WriteFile(filepath.Join(root, "run.sh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	go func() {
		// Opening a FIFO to read waits for its writer: the script.
		b, err := os.ReadFile(fifo)
		if err != nil || string(b) != "started\n" {
			t.Errorf("the FIFO read %q, %v", b, err)
			return
		}
		// The script may be between its shell and its exec of sleep, when
		// its command line reads as neither: look again until one shows.
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
			pids := append(processesRunning(t, "sh", "run.sh"), processesRunning(t, "sleep", seconds)...)
			if len(pids) == 1 {
				os.Stdout.WriteString("running " + strconv.Itoa(pids[0]) + "\n")
				return
			}
			if time.Now().After(deadline) {
				// Said on stdout, which the test reads: not left to the
				// timeout of the call.
				os.Stdout.WriteString("failed: " + strconv.Itoa(len(pids)) + " programs of the call running, want 1\n")
				return
			}
		}
	}()
	c := tools.Config{AllowedCommands: cmds("sh {file}"), AllowedPaths: []string{root},
		Timeout: time.Hour, RunAs: runAs()}
	call(t, c, RunCommand{Command: "sh", Args: []string{"run.sh"}})
	t.Fatal("the call returned: the organism was to be killed during it")
}
