package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/wasm/wasmtest"
)

// TestGracefulShutdownCutsTheDrain: a graceful stop — an OOB shutdown with
// timeout-seconds, or SIGTERM with the pump's drain time — ends once that
// time runs out even while a WASM guest spins with a deadline of its own
// far beyond it: the guest is interrupted, the process exits, and the
// interrupted message stays in the journal, so the next start runs it again.
func TestGracefulShutdownCutsTheDrain(t *testing.T) {
	loop := wasmtest.New(t.TempDir()).Build(t, "loop", true)
	src, err := os.ReadFile(loop)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		stop func(t *testing.T, s *servedBus, dir, data string)
		code int
	}{
		{"ctl shutdown mode=graceful timeout-seconds=1", func(t *testing.T, _ *servedBus, dir, data string) {
			r := runBinary(t, dir, "", "ctl", "--data", data, "shutdown", "mode=graceful", "timeout-seconds=1")
			if r.code != 0 || !strings.Contains(r.stdout, "shutting down (graceful)") {
				t.Fatalf("shutdown: %d\n%s%s", r.code, r.stdout, r.stderr)
			}
		}, 0},
		// The drain that no operator bounded ran out: the exit says so.
		{"SIGTERM", func(t *testing.T, s *servedBus, _, _ string) {
			if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
		}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir, data := oobDir(t)
			writeFile(t, filepath.Join(dir, "spin.wasm"), string(src))
			writeFile(t, filepath.Join(dir, "organism.yaml"), `organism: {name: drain-cut}
oob: {port: 0, unix_socket: run/oob.sock}
listeners:
  - name: spin
    type: wasm
    module: spin.wasm
    description: Never answers
    payload: {root: Spin, fields: [{name: N, type: string}]}
    capabilities: {timeout: 600s, instances: 1}
`)
			s := startRun(t, dir, data, "--insecure-dev")
			s.stderr.waitFor(t, "OOB channel listening")
			ws := dialWS(t, s)
			thread := ws.sendTo(t, "spin", "x")
			ws.await(t, "the message delivered to spin", func(f map[string]any) bool {
				return f["type"] == "message" && f["thread_id"] == thread && f["listener"] == "spin"
			})
			tc.stop(t, s, dir, data)
			if code := s.wait(t); code != tc.code {
				t.Fatalf("exit %d, want %d\n%s", code, tc.code, s.stderr)
			}
			if !strings.Contains(s.stderr.String(), "cancelling the handlers still running") {
				t.Errorf("the cut drain is not logged:\n%s", s.stderr)
			}

			again := startRun(t, dir, data, "--insecure-dev")
			again.stderr.waitFor(t, "OOB channel listening")
			again.stderr.waitFor(t, `recovered undelivered messages from the journal" redelivered=1`)
			if r := runBinary(t, dir, "", "ctl", "--data", data, "shutdown", "mode=immediate", "timeout-seconds=5"); r.code != 0 {
				t.Fatalf("shutdown: %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			if code := again.wait(t); code != 0 {
				t.Fatalf("exit %d\n%s", code, again.stderr)
			}
		})
	}
}

// TestConsoleShutdownCutsTheDrain: the console's graceful stop at the end
// of its input ends once the pump's drain time (10 s) runs out, even while
// a WASM guest spins with a deadline of 600 s: the guest is interrupted and
// the console exits, saying the drain ran out (exit 1).
func TestConsoleShutdownCutsTheDrain(t *testing.T) {
	loop := wasmtest.New(t.TempDir()).Build(t, "loop", true)
	src, err := os.ReadFile(loop)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "spin.wasm"), string(src))
	writeFile(t, filepath.Join(dir, "organism.yaml"), `organism: {name: drain-cut}
listeners:
  - name: spin
    type: wasm
    module: spin.wasm
    description: Never answers
    payload: {root: Spin, fields: [{name: N, type: string}]}
    capabilities: {timeout: 600s, instances: 1}
`)
	cmd := exec.Command(binary, "console", "--data", filepath.Join(dir, "data"), "--reply-timeout", "1s",
		"--line-wait", "50ms", "organism.yaml")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader("@spin x\n")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(2 * time.Minute): // the drain is 10 s; the guest's deadline 600 s
		_ = cmd.Process.Kill()
		<-exited
		t.Fatalf("the console still stops after 2 minutes: its drain waits for the guest\nstdout:\n%s\nstderr:\n%s", &out, &errOut)
	}
	if code := cmd.ProcessState.ExitCode(); code != 1 {
		t.Errorf("exit %d, want 1 (the drain ran out)\nstderr:\n%s", code, &errOut)
	}
	if !strings.Contains(errOut.String(), "cancelling the handlers still running") {
		t.Errorf("the cut drain is not logged:\n%s", &errOut)
	}
}
