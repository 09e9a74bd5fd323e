package main

import (
	"bytes"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestConsoleOutputClosed: `xmlpipe console --data D | head -c 5` — the
// reader of the console's output goes away mid-session. The console is not
// killed by SIGPIPE with its durable organism open: the session ends, the
// organism shuts down (its journal closed and whole) and the exit is 1,
// saying why.
func TestConsoleOutputClosed(t *testing.T) {
	dir := helloDir(t)
	data := filepath.Join(dir, "data")
	cmd := exec.Command(binary, "console", "--data", data, "organism.yaml")
	cmd.Dir = dir
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	head := make([]byte, 5)
	if _, err := io.ReadFull(stdout, head); err != nil {
		t.Fatal(err)
	}
	stdout.Close() // | head -c 5 exits
	if _, err := io.WriteString(stdin, "@greeter Dan\n"); err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		<-exited
		t.Fatalf("the console did not end\nstderr:\n%s", &errOut)
	}
	if code := cmd.ProcessState.ExitCode(); code != 1 {
		t.Fatalf("exit %d (%v), want 1\nstderr:\n%s", code, cmd.ProcessState, &errOut)
	}
	if !strings.Contains(errOut.String(), "console: output closed") {
		t.Errorf("the exit does not say why:\n%s", &errOut)
	}
	if v := runBinary(t, dir, "", "journal", "verify", "--data", data); v.code != 0 || !strings.Contains(v.stdout, "journal OK") {
		t.Errorf("journal verify: %d\n%s%s", v.code, v.stdout, v.stderr)
	}
}
