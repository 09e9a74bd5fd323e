package pump_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/tools"
	"github.com/xml-pipeline/xmlpipe/listeners/tools/command"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// childrenRunning returns the pids of this process's children whose command
// line is exactly argv (read from /proc).
func childrenRunning(t *testing.T, argv ...string) []int {
	t.Helper()
	want := []byte(strings.Join(argv, "\x00") + "\x00")
	self := strconv.Itoa(os.Getpid())
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, dir := range dirs {
		cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		if err != nil || !bytes.Equal(cmdline, want) {
			continue
		}
		status, err := os.ReadFile(filepath.Join(dir, "status"))
		if err != nil || !strings.Contains(string(status), "\nPPid:\t"+self+"\n") {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(dir))
		pids = append(pids, pid)
	}
	return pids
}

// processGone reports whether pid no longer exists (exited and reaped).
func processGone(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return os.IsNotExist(err)
}

// TestRunCommandStopped: a conversation whose run_command runs `sleep 4747`
// leaves no process behind, checked by pid, when it is killed (Pump.Kill)
// and when the listener's timeout fires (the tool kills its process group
// once its context ends).
func TestRunCommandStopped(t *testing.T) {
	tests := []struct {
		name    string
		timeout time.Duration
		stop    func(t *testing.T, p *pump.Pump, thread string)
		want    pump.EventKind // what the sender is told
	}{
		{"kill", 0, func(t *testing.T, p *pump.Pump, thread string) {
			if _, err := p.Kill(thread); err != nil {
				t.Fatalf("Kill: %v", err)
			}
		}, ""},
		{"listener timeout", 300 * time.Millisecond, func(*testing.T, *pump.Pump, string) {}, pump.EventHuh},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			run := pump.Listener{Name: command.Name, Payload: payloadType[command.RunCommand](t), Timeout: tc.timeout,
				Handler: xmlpipe.Typed((&command.Tool{Policy: tools.Fixed{AllowedCommands: []tools.Command{{Name: "sleep", Args: []string{"{int}"}}}}}).Handle)}
			p := startPump(t, pump.Options{}, run)
			all := newRecorder()
			p.Subscribe(all)
			out := newRecorder()
			thread := mustSend(t, p, client, command.Name, &command.RunCommand{Command: "sleep", Args: []string{"4747"}}, out)
			var pids []int
			poll(t, "sleep 4747 to start", func() bool {
				pids = childrenRunning(t, "sleep", "4747")
				return len(pids) == 1
			})
			tc.stop(t, p, thread)
			poll(t, "sleep 4747 to be gone", func() bool { return processGone(pids[0]) })
			out.waitFor(t, "completion", kind(pump.EventComplete))
			if tc.want != "" {
				out.waitFor(t, "the sender's "+string(tc.want), kind(tc.want))
			} else if n := out.count(kind(pump.EventHuh)) + out.count(kind(pump.EventReply)); n != 0 {
				t.Errorf("the killed conversation's sender got %d answers, want none", n)
			}
			if left := childrenRunning(t, "sleep", "4747"); len(left) != 0 {
				t.Errorf("processes left behind: %v", left)
			}
		})
	}
}
