package bus

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestBusUnreadableFrameJournaledOnItsThread: a /bus frame the pump cannot
// read gets a <huh> on a fresh thread, and the journal keeps the refusal on
// that same thread, from the socket's identity — so the threads API shows
// the client a row it can match to its <huh>, not a "- → -" one.
func TestBusUnreadableFrameJournaledOnItsThread(t *testing.T) {
	f := newFixture(t)
	token := f.loginAs("zoe", auth.Operator)
	c := f.dial("/bus", token)
	for _, frame := range []string{"<not xml", "this is not xml", "<Greeting><Name>Dan</Name></Greeting>"} {
		t.Run(frame, func(t *testing.T) {
			sendRaw(t, c, frame)
			huh, raw := readEnvelope(t, c)
			if huh.Payload.XMLName.Local != "huh" || !stage.IsThreadID(huh.Thread) {
				t.Fatalf("want a <huh> on a thread id, got %s", raw)
			}
			f.waitJournal()
			status, th, _ := f.do("GET", "/api/v1/threads/"+huh.Thread, token, nil)
			if status != 200 {
				t.Fatalf("GET the <huh>'s thread %s: %d %v", huh.Thread, status, th)
			}
			status, msgs, _ := f.do("GET", "/api/v1/threads/"+huh.Thread+"/messages", token, nil)
			list, _ := msgs["messages"].([]any)
			if status != 200 || len(list) != 1 {
				t.Fatalf("messages of %s: %d %v", huh.Thread, status, msgs)
			}
			m := list[0].(map[string]any)
			got := map[string]any{"thread_id": m["thread_id"], "from": m["from"]}
			want := map[string]any{"thread_id": huh.Thread, "from": "websocket:zoe"}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("journaled refusal (-want +got):\n%s\nrecord %v", diff, m)
			}
		})
	}
}

// TestAPIRefusalDiagnostics: the messages API says why a message was
// refused — the journaled refusal of an unreadable /bus frame carries its
// diagnostics, on the thread's messages and on /api/v1/messages.
func TestAPIRefusalDiagnostics(t *testing.T) {
	f := newFixture(t)
	token := f.loginAs("una", auth.Operator)
	c := f.dial("/bus", token)
	sendRaw(t, c, "<not xml")
	huh, raw := readEnvelope(t, c)
	if huh.Payload.XMLName.Local != "huh" {
		t.Fatalf("want a <huh>, got %s", raw)
	}
	f.waitJournal()
	for _, path := range []string{"/api/v1/threads/" + huh.Thread + "/messages", "/api/v1/messages?thread=" + huh.Thread} {
		status, body, _ := f.do("GET", path, token, nil)
		list, _ := body["messages"].([]any)
		if status != 200 || len(list) != 1 {
			t.Fatalf("%s: %d %v", path, status, body)
		}
		m := list[0].(map[string]any)
		diags, _ := m["diagnostics"].([]any)
		if m["kind"] != "huh" || len(diags) == 0 {
			t.Fatalf("%s: refusal %v, want kind huh with diagnostics", path, m)
		}
		for _, d := range diags {
			if s, _ := d.(string); strings.TrimSpace(s) == "" {
				t.Errorf("%s: empty diagnostic in %v", path, diags)
			}
		}
		t.Logf("%s: diagnostics %q", path, diags)
	}
}
