package bus

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// TestMemoryTextIsTheOwners: what an agent asks to remember is the
// conversation's user's. Anyone else who may read the conversation (another
// operator, a viewer) sees that a memory request happened — who asked,
// when, how its approval ended — but not its text, on every surface: the
// thread's messages (REST), the event stream's message events (/api/v1/ws)
// and the history console --connect reads (/ws monitor). Its owner and
// admins see it.
func TestMemoryTextIsTheOwners(t *testing.T) {
	const secret = "Zoe"
	m := newNativeModel(t, `call:remember:{"Content":"Alice's daughter is called `+secret+`"}`, "Noted.")
	f := newFixtureWith(t, rememberingOrganism(t, m))
	tok := f.tokens()
	readers := map[string]string{"alice": tok[auth.Operator], "olga": f.loginAs("olga", auth.Operator),
		"viewer": tok[auth.Viewer], "admin": tok[auth.Admin]}
	sees := map[string]bool{"alice": true, "admin": true}
	streams, logs := map[string]*websocket.Conn{}, map[string]*websocket.Conn{}
	for name, token := range readers {
		streams[name] = f.dial("/api/v1/ws", token)
		readEvent(t, streams[name], "connected")
		logs[name] = f.dial("/api/v1/ws/messages", token)
		writeFrame(t, logs[name], frame{"cmd": "subscribe", "filter": map[string][]string{"agents": {"system.memory"}}})
		readEvent(t, logs[name], "subscribed")
	}
	ws := f.dial("/ws", readers["alice"])
	readUntil(t, ws, "connected")
	conv := sendOver(t, ws, "keeper", "remember my daughter's name")
	id := readUntil(t, ws, "approval")["approval"].(map[string]any)["id"].(string)
	if status, body, _ := f.do("POST", "/api/v1/approvals/"+id, readers["alice"],
		map[string]string{"decision": "approve"}); status != http.StatusOK {
		t.Fatalf("approve: %d %v", status, body)
	}
	if r := readUntil(t, ws, "reply"); r["text"] != "Noted." {
		t.Fatalf("reply %v", r)
	}
	f.waitJournal()

	for name, token := range readers {
		// The history console --connect reads (/monitor, /buffer).
		c := f.dial("/ws", token)
		readUntil(t, c, "connected")
		writeFrame(t, c, map[string]any{"type": "monitor", "id": "m1", "prefix": "*"})
		hist := readUntil(t, c, "monitor")
		hraw, _ := json.Marshal(hist)
		if got := strings.Contains(string(hraw), secret); got != sees[name] {
			t.Errorf("%s: the memory's text in the history: %v, want %v:\n%s", name, got, sees[name], hraw)
		}
		if !sees[name] && !strings.Contains(string(hraw), "withheld") {
			t.Errorf("%s: the history does not say the memory is withheld:\n%s", name, hraw)
		}

		// REST: the conversation's messages.
		status, body, _ := f.do("GET", "/api/v1/threads/"+conv+"/messages?scope=conversation", token, nil)
		if status != http.StatusOK {
			t.Fatalf("%s: messages: %d %v", name, status, body)
		}
		raw, _ := json.Marshal(body)
		if got := strings.Contains(string(raw), secret); got != sees[name] {
			t.Errorf("%s: the memory's text in the messages: %v, want %v:\n%s", name, got, sees[name], raw)
		}
		var request, decision bool
		for _, v := range body["messages"].([]any) {
			msg := v.(map[string]any)
			if msg["to"] != "system.memory" && msg["from"] != "system.memory" {
				continue
			}
			switch msg["kind"] {
			case "decision":
				decision = decision || strings.Contains(msg["payload"].(string), `decision="approved"`)
			case "message":
				if msg["from"] != "keeper" {
					break
				}
				request = true
				withheld := msg["withheld"] == "memory" && msg["payload"] == ""
				if withheld == sees[name] || msg["payload_type"] != "Remember" || msg["timestamp"] == "" {
					t.Errorf("%s: the memory request %v (withheld: want %v)", name, msg, !sees[name])
				}
			}
		}
		if !request || !decision {
			t.Errorf("%s: the memory request (%v) or its approval (%v) is not listed", name, request, decision)
		}
		// The message log: the request delivered to system.memory.
		for {
			msg := readFrame(t, logs[name])
			if msg["to"] != "system.memory" {
				continue
			}
			withheld := msg["withheld"] == "memory" && msg["payload"] == ""
			if withheld == sees[name] || strings.Contains(msg["payload"].(string), secret) != sees[name] {
				t.Errorf("%s: message log %v (withheld: want %v)", name, msg, !sees[name])
			}
			break
		}
		// The event stream: the request's message event.
		for {
			e := readEvent(t, streams[name], "message")
			msg := e["message"].(map[string]any)
			if msg["to"] != "system.memory" {
				continue
			}
			withheld := msg["withheld"] == "memory" && msg["payload"] == ""
			if withheld == sees[name] || strings.Contains(msg["payload"].(string), secret) != sees[name] {
				t.Errorf("%s: stream message event %v (withheld: want %v)", name, msg, !sees[name])
			}
			break
		}
	}
}

// TestMemoryTextIsTheOwnersInContext: the agent's context history
// (GET /api/v1/threads/{id}/context?content=full) holds the remember call's
// arguments, the memory listener's answer and what recall returned — the
// stored memory itself. To anyone but the conversation's owner and admins
// those segments show without their content (withheld).
func TestMemoryTextIsTheOwnersInContext(t *testing.T) {
	const secret = "Zoe"
	m := newNativeModel(t, `call:remember:{"Content":"Alice's daughter is called `+secret+`"}`, `call:recall:{}`,
		"Noted.")
	f := newFixtureWith(t, rememberingOrganism(t, m))
	tok := f.tokens()
	readers := map[string]string{"alice": tok[auth.Operator], "olga": f.loginAs("olga", auth.Operator),
		"viewer": tok[auth.Viewer], "admin": tok[auth.Admin]}
	sees := map[string]bool{"alice": true, "admin": true}
	ws := f.dial("/ws", readers["alice"])
	readUntil(t, ws, "connected")
	conv := sendOver(t, ws, "keeper", "remember my daughter's name")
	id := readUntil(t, ws, "approval")["approval"].(map[string]any)["id"].(string)
	if status, body, _ := f.do("POST", "/api/v1/approvals/"+id, readers["alice"],
		map[string]string{"decision": "approve"}); status != http.StatusOK {
		t.Fatalf("approve: %d %v", status, body)
	}
	if r := readUntil(t, ws, "reply"); r["text"] != "Noted." {
		t.Fatalf("reply %v", r)
	}
	for name, token := range readers {
		status, body, _ := f.do("GET", "/api/v1/threads/"+conv+"/context?content=full", token, nil)
		if status != http.StatusOK {
			t.Fatalf("%s: context: %d %v", name, status, body)
		}
		raw, _ := json.Marshal(body)
		if got := strings.Contains(string(raw), secret); got != sees[name] {
			t.Errorf("%s: the memory's text in the context: %v, want %v:\n%s", name, got, sees[name], raw)
		}
		withheld := 0
		for _, v := range body["segments"].([]any) {
			if v.(map[string]any)["withheld"] == "memory" {
				withheld++
			}
		}
		// The remember call, its result and the recall's result.
		if want := map[bool]int{true: 0, false: 3}[sees[name]]; withheld < want || sees[name] && withheld > 0 {
			t.Errorf("%s: %d segments withheld, want %d:\n%s", name, withheld, want, raw)
		}
	}
}

// TestMemoryWithholdRule: the rule on each kind of journal entry of memory
// traffic, for a reader who may not read its conversation's: a message,
// refusal or failure loses its payload, and all but a refusal their
// diagnostics (a failure's may quote it); a decision record, and any entry
// for a reader who may, stays as it is.
func TestMemoryWithholdRule(t *testing.T) {
	for _, tc := range []struct {
		name      string
		entry     store.Entry
		reads     bool
		withheld  bool
		diagnosed bool
	}{
		{"request", store.Entry{Kind: store.Message, From: "keeper", To: "system.memory"}, false, true, false},
		{"answer", store.Entry{Kind: store.Message, From: "system.memory", To: "keeper"}, false, true, false},
		{"failure", store.Entry{Kind: store.Huh, From: "system.memory", To: "keeper"}, false, true, false},
		{"dead letter", store.Entry{Kind: store.DeadLetter, From: "keeper", To: "system.memory"}, false, true, false},
		{"refusal", store.Entry{Kind: store.Refusal, From: "core", To: "keeper", Listener: "system.memory"}, false, true,
			true},
		{"decision", store.Entry{Kind: store.Decision, From: "keeper", To: "system.memory"}, false, false, true},
		{"owner's request", store.Entry{Kind: store.Message, From: "keeper", To: "system.memory"}, true, false, true},
		{"other traffic", store.Entry{Kind: store.Huh, From: "greeter", To: "shouter"}, false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.entry.Conversation = "c1"
			r := &memoryReader{sess: auth.Session{Username: "olga", Role: auth.Operator},
				owners: map[string]bool{"c1": tc.reads}}
			m := apiMessage{Payload: "<Remember/>", Diagnostics: []string{"why"}}
			r.withhold(&m, tc.entry)
			if got := m.Withheld == withheldMemory && m.Payload == ""; got != tc.withheld {
				t.Errorf("withheld: %+v, want %v", m, tc.withheld)
			}
			if got := len(m.Diagnostics) > 0; got != tc.diagnosed {
				t.Errorf("diagnostics: %+v, want kept %v", m, tc.diagnosed)
			}
		})
	}
}
