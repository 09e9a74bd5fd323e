package bus

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// commandYAML is an organism whose run_command may run sleep.
const commandYAML = `organism: {name: kill-test}
listeners:
  - name: run_command
    payload_class: tools.RunCommand
    handler: tools.RunCommand
    description: Runs an allowed program
    tool_config:
      run_command: {allowed_commands: [{command: sleep, args: ["{int}"]}], timeout: 10m}
`

// commandOrganism builds the organism of commandYAML.
func commandOrganism(o organism.Options) (*organism.Organism, error) {
	cfg, err := config.Parse("kill-test.yaml", []byte(commandYAML))
	if err != nil {
		return nil, err
	}
	return organism.New(cfg, o)
}

// childPids returns the pids of this process's children whose command line
// is exactly argv (read from /proc).
func childPids(t *testing.T, argv ...string) []int {
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

// pollFor waits until cond holds (checked every 5 ms), or fails.
func pollFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestKillStopsRunCommand: POST /api/v1/threads/{id}/kill on a conversation
// whose run_command runs `sleep 4747` stops the program — its pid is gone —
// and the thread reads killed.
func TestKillStopsRunCommand(t *testing.T) {
	f := newFixtureWith(t, commandOrganism)
	admin := f.tokens()[auth.Admin]
	thread := f.inject(admin, "run_command", "<RunCommand><Command>sleep</Command><Arg>4747</Arg></RunCommand>")
	var pids []int
	pollFor(t, "sleep 4747 to start", func() bool {
		pids = childPids(t, "sleep", "4747")
		return len(pids) == 1
	})
	status, body, _ := f.do("POST", "/api/v1/threads/"+thread+"/kill", admin, nil)
	if status != 200 || body["status"] != "killed" {
		t.Fatalf("kill: %d %v", status, body)
	}
	pollFor(t, "sleep 4747 to be gone", func() bool {
		_, err := os.Stat("/proc/" + strconv.Itoa(pids[0]))
		return os.IsNotExist(err)
	})
	if left := childPids(t, "sleep", "4747"); len(left) != 0 {
		t.Errorf("processes left behind: %v", left)
	}
	f.waitJournal()
	if status, body, _ := f.do("GET", "/api/v1/threads/"+thread, admin, nil); status != 200 || body["status"] != "killed" {
		t.Errorf("killed thread: %d %v", status, body)
	}
}

// TestOperatorKillsOwnConversation: an operator may kill a conversation one
// of their sessions began — and not another user's, which answers 404 as
// if it did not exist and keeps running; an admin may kill any.
func TestOperatorKillsOwnConversation(t *testing.T) {
	f := newFixture(t)
	olga, bob, ada := f.loginAs("olga", auth.Operator), f.loginAs("bob", auth.Operator), f.loginAs("ada", auth.Admin)
	if status, body, _ := f.do("POST", "/api/v1/agents/shouter/pause", ada, nil); status != 200 {
		t.Fatalf("pause: %d %v", status, body)
	}
	begin := func(token string) string {
		t.Helper()
		status, inj, _ := f.do("POST", "/api/v1/inject", token, map[string]any{"to": "greeter", "payload": map[string]string{"name": "Kim"}})
		if status != 200 {
			t.Fatalf("inject: %d %v", status, inj)
		}
		return inj["thread_id"].(string)
	}
	mine, adas := begin(olga), begin(ada)
	if status, body, _ := f.do("POST", "/api/v1/threads/"+mine+"/kill", bob, nil); status != 404 || body["error"] != "Thread not found" {
		t.Fatalf("bob kills olga's conversation: %d %v, want 404", status, body)
	}
	if status, body, _ := f.do("POST", "/api/v1/threads/"+adas+"/kill", olga, nil); status != 404 {
		t.Fatalf("olga kills ada's conversation: %d %v, want 404", status, body)
	}
	if !f.org.Pump.Threads().Known(mine) || !f.org.Pump.Threads().Known(adas) {
		t.Fatal("a refused kill ended a conversation")
	}
	if status, body, _ := f.do("POST", "/api/v1/threads/"+mine+"/kill", olga, nil); status != 200 || body["thread_id"] != mine {
		t.Fatalf("olga kills her own: %d %v", status, body)
	}
	if status, body, _ := f.do("POST", "/api/v1/threads/"+adas+"/kill", ada, nil); status != 200 {
		t.Fatalf("ada kills hers: %d %v", status, body)
	}
	if f.org.Pump.Threads().Known(mine) || f.org.Pump.Threads().Known(adas) {
		t.Fatal("a killed conversation is still live")
	}
}
