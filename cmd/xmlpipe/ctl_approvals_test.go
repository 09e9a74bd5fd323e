package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// heldHelloOOB is the hello-world organism with greeter's calls to shouter
// waiting for a human, and its OOB channel on a Unix socket.
const heldHelloOOB = `
organism: {name: held-hello}
oob: {port: 0, unix_socket: run/oob.sock}
listeners:
  - name: greeter
    payload_class: handlers.hello.Greeting
    handler: handlers.hello.handle_greeting
    description: Greets
    agent: true
    peers: [shouter]
    approval: [shouter]
  - name: shouter
    payload_class: handlers.hello.GreetingResponse
    handler: handlers.hello.handle_shout
    description: Shouts
    agent: true
    peers: [response-handler]
  - name: response-handler
    payload_class: handlers.hello.ShoutedResponse
    handler: handlers.hello.handle_response_print
    description: Prints
`

// The owner decides, over the OOB channel, the calls xmlpipe run holds for
// a human: the approval-pending event names the approval, list-approvals
// shows what it holds, decide-approval lets it through.
func TestCtlDecidesApprovals(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "organism.yaml"), []byte(heldHelloOOB), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	if r := runBinary(t, dir, "", "keys", "init", "--data", data); r.code != 0 {
		t.Fatalf("keys init: %d\n%s", r.code, r.stderr)
	}
	s := startRun(t, dir, data, "--insecure-dev")
	s.stderr.waitFor(t, "OOB channel listening")
	ctl := func(args ...string) result {
		return runBinary(t, dir, "", append([]string{"ctl", "--data", data}, args...)...)
	}
	if r := ctl("inject-message", "to=greeter", `payload=<Greeting xmlns=""><Name>Cy</Name></Greeting>`); r.code != 0 {
		t.Fatalf("inject-message: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var id string
	for deadline := time.Now().Add(60 * time.Second); id == ""; {
		r := ctl("list-approvals")
		if r.code != 0 {
			t.Fatalf("list-approvals: %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		if m := regexp.MustCompile(`<id>([0-9a-f]+)</id>`).FindStringSubmatch(r.stdout); m != nil {
			id = m[1]
			for _, want := range []string{"<status>pending</status>", "<agent>greeter</agent>", "<target>shouter</target>",
				"<payload>&lt;GreetingResponse&gt;&lt;Message&gt;Hello, Cy!&lt;/Message&gt;"} {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("list-approvals lacks %s:\n%s", want, r.stdout)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no approval listed:\n%s", r.stdout)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r := ctl("decide-approval", "id="+id, "decision=approve", "reason=fine"); r.code != 0 ||
		!strings.Contains(r.stdout, "<status>approved</status>") || !strings.Contains(r.stdout, "<decided-by>oob</decided-by>") {
		t.Fatalf("decide-approval: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	s.stderr.waitFor(t, "HELLO, CY!")
	r := ctl("decide-approval", "id="+id, "decision=deny")
	if r.code != 1 || !strings.Contains(r.stdout, "<code>ALREADY_DECIDED</code>") ||
		!strings.Contains(r.stdout, "approval "+id+" was approved already by oob (fine)") {
		t.Fatalf("deciding again: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
