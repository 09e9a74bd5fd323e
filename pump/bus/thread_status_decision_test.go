package bus

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// threadListed reports whether GET /api/v1/threads?status=status lists
// thread.
func (f *fixture) threadListed(token, status, thread string) bool {
	f.t.Helper()
	code, body, _ := f.do("GET", "/api/v1/threads?status="+status, token, nil)
	if code != http.StatusOK {
		f.t.Fatalf("GET threads?status=%s: %d %v", status, code, body)
	}
	return strings.Contains(fmt.Sprint(body["threads"]), thread)
}

// TestDeniedCallReadsDenied: a conversation whose call an operator denied
// did not fail — the agent got the refusal and answered — so it reads
// denied (REST, and so the dashboard), not error.
func TestDeniedCallReadsDenied(t *testing.T) {
	m := newLoopModel(t, "<RunCommand><Command>date</Command></RunCommand>", "I was not allowed.")
	f := newFixtureWith(t, governedOrganism(t, m))
	tok := f.tokens()
	ws := f.dial("/ws", tok[auth.Operator])
	readUntil(t, ws, "connected")
	stream := f.dial("/api/v1/ws", tok[auth.Viewer])
	readEvent(t, stream, "connected")
	conv := sendOver(t, ws, "researcher", "what day is it?")
	id := readUntil(t, ws, "approval")["approval"].(map[string]any)["id"].(string)
	if status, body, _ := f.do("POST", "/api/v1/approvals/"+id, tok[auth.Operator],
		map[string]string{"decision": "deny", "reason": "not now"}); status != http.StatusOK {
		t.Fatalf("deny: %d %v", status, body)
	}
	if r := readUntil(t, ws, "reply"); r["text"] != "I was not allowed." {
		t.Fatalf("reply %v", r)
	}
	if c := readUntil(t, ws, "complete"); c["error"] != nil && c["error"] != "" {
		t.Fatalf("complete %v: a denial is no error", c)
	}
	f.waitJournal()
	status, body, _ := f.do("GET", "/api/v1/threads/"+conv, tok[auth.Viewer], nil)
	if status != http.StatusOK || body["status"] != "denied" {
		t.Fatalf("thread of the denied call: %d %v, want status denied", status, body)
	}
	if !f.threadListed(tok[auth.Viewer], "denied", conv) || f.threadListed(tok[auth.Viewer], "error", conv) {
		t.Fatalf("?status=denied does not list %s, or ?status=error does", conv)
	}
	if e := readEvent(t, stream, "thread_updated"); e["thread_id"] != conv || e["status"] != "denied" {
		t.Fatalf("stream: %v, want the conversation's completion as denied", e)
	}
}

// TestCancelledConversationReadsCancelled: after POST .../cancel the
// conversation reads cancelled (REST, and so the dashboard) — not error —
// until its owner continues it, then completed.
func TestCancelledConversationReadsCancelled(t *testing.T) {
	f := newFixtureWith(t, commandOrganism)
	admin := f.tokens()[auth.Admin]
	completed := f.watchCompletions()
	stream := f.dial("/api/v1/ws", admin)
	readEvent(t, stream, "connected")
	thread := f.inject(admin, "run_command", "<RunCommand><Command>sleep</Command><Arg>4849</Arg></RunCommand>")
	var pids []int
	pollFor(t, "sleep 4849 to start", func() bool {
		pids = childPids(t, "sleep", "4849")
		return len(pids) == 1
	})
	if status, body, _ := f.do("POST", "/api/v1/threads/"+thread+"/cancel", admin, nil); status != 200 {
		t.Fatalf("cancel: %d %v", status, body)
	}
	pollFor(t, "sleep 4849 to be gone", func() bool {
		_, err := os.Stat("/proc/" + strconv.Itoa(pids[0]))
		return os.IsNotExist(err)
	})
	completed.wait(t, thread)
	f.waitJournal()
	if status, body, _ := f.do("GET", "/api/v1/threads/"+thread, admin, nil); status != 200 || body["status"] != "cancelled" {
		t.Fatalf("cancelled thread: %d %v, want status cancelled", status, body)
	}
	if !f.threadListed(admin, "cancelled", thread) || f.threadListed(admin, "error", thread) {
		t.Fatalf("?status=cancelled does not list %s, or ?status=error does", thread)
	}
	// Both the cancel's update and the completion's say cancelled.
	for range 2 {
		if e := readEvent(t, stream, "thread_updated"); e["thread_id"] != thread || e["status"] != "cancelled" {
			t.Fatalf("stream: %v, want the conversation cancelled", e)
		}
	}
	again := f.watchCompletions()
	status, body, _ := f.do("POST", "/api/v1/inject", admin, map[string]any{"to": "run_command", "thread_id": thread,
		"payload": "<RunCommand><Command>sleep</Command><Arg>0</Arg></RunCommand>"})
	if status != 200 {
		t.Fatalf("continue: %d %v", status, body)
	}
	again.wait(t, thread)
	pollFor(t, "the continued thread to read completed", func() bool {
		f.waitJournal()
		_, body, _ := f.do("GET", "/api/v1/threads/"+thread, admin, nil)
		return body["status"] == "completed"
	})
}
