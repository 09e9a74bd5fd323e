package bus

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// TestMemoryTextIsTheOwnersInMonitor: the history console --connect reads
// (/ws monitor, the /monitor and /buffer commands) comes from the agents'
// context buffer for a live thread the journal does not hold (journal
// disabled). There it holds the agent loop's own records: the assistant
// message calling remember (its arguments, the text to remember) and what
// recall returned (the stored memories). To anyone but the conversation's
// owner and admins those slots read withheld, as the memory listener's
// traffic does; the message log (/api/v1/ws/messages) carries none of it to
// them either.
func TestMemoryTextIsTheOwnersInMonitor(t *testing.T) {
	const secret = "Zoe"
	m := newNativeModel(t, `call:remember:{"Content":"Alice's daughter is called `+secret+`"}`, `call:recall:{}`,
		`call:remember:{"Content":"Alice asked twice"}`, "Noted.")
	f := newFixtureWith(t, journalessRememberingOrganism(t, m))
	tok := f.tokens()
	readers := map[string]string{"alice": tok[auth.Operator], "olga": f.loginAs("olga", auth.Operator),
		"viewer": tok[auth.Viewer], "admin": tok[auth.Admin]}
	sees := map[string]bool{"alice": true, "admin": true}
	logs := map[string]*websocket.Conn{}
	for name, token := range readers {
		logs[name] = f.dial("/api/v1/ws/messages", token)
		writeFrame(t, logs[name], frame{"cmd": "subscribe"})
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
	// The second remember waits for its approval: the thread is live, its
	// history holds the first remember call and what recall returned.
	second := readUntil(t, ws, "approval")["approval"].(map[string]any)["id"].(string)

	for name, token := range readers {
		c := f.dial("/ws", token)
		readUntil(t, c, "connected")
		for _, prefix := range []string{"*", conv[:8]} {
			writeFrame(t, c, map[string]any{"type": "monitor", "id": "m-" + prefix, "prefix": prefix})
			hist := readUntil(t, c, "monitor")
			raw, _ := json.Marshal(hist)
			if !strings.Contains(string(raw), "llm.calls") || !strings.Contains(string(raw), "llm.result") {
				t.Fatalf("%s: monitor %s shows no loop record (is the history the context buffer's?):\n%s",
					name, prefix, raw)
			}
			if got := strings.Contains(string(raw), secret); got != sees[name] {
				t.Errorf("%s: monitor %s: the memory's text in the history: %v, want %v:\n%s", name, prefix, got,
					sees[name], raw)
			}
			if !sees[name] && !strings.Contains(string(raw), "withheld") {
				t.Errorf("%s: monitor %s does not say the memory is withheld:\n%s", name, prefix, raw)
			}
		}
	}
	if status, body, _ := f.do("POST", "/api/v1/approvals/"+second, readers["alice"],
		map[string]string{"decision": "approve"}); status != http.StatusOK {
		t.Fatalf("approve: %d %v", status, body)
	}
	if r := readUntil(t, ws, "reply"); r["text"] != "Noted." {
		t.Fatalf("reply %v", r)
	}
	// The message log, up to the keeper's answer.
	for name := range readers {
		for {
			msg := readFrame(t, logs[name])
			raw, _ := json.Marshal(msg)
			if strings.Contains(string(raw), secret) && !sees[name] {
				t.Errorf("%s: the memory's text in the message log: %s", name, raw)
			}
			if msg["from"] == "keeper" && strings.Contains(string(raw), "Noted.") {
				break
			}
		}
	}
}

// journalessRememberingOrganism is rememberingOrganism with its journal
// disabled: a history is then the context buffer's.
func journalessRememberingOrganism(t *testing.T, m *nativeModel) buildFunc {
	dir := t.TempDir()
	t.Setenv("TEST_LLM_KEY", "sk-test")
	path := filepath.Join(dir, "organism.yaml")
	yaml := fmt.Sprintf(memoryYAML, m.URL) + "journal: {enabled: false}\n"
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return func(o organism.Options) (*organism.Organism, error) { return organism.Load(path, o) }
}

// TestHistoryPayloads: the rule on a history's slots for a reader who may
// not read its conversation's memory text: the agent loop's remember and
// recall records, a step a halt held with them and memory traffic read
// withheld, and so does an unfold of a history holding any; a decision
// record, other records and any slot for a reader who may stay as they
// are.
func TestHistoryPayloads(t *testing.T) {
	const w = withheldMemoryText
	remember := organism.Slot{From: "keeper", PayloadType: "llm.calls",
		Payload: `{"calls":[{"id":"1","name":"remember","arguments":"{\"Content\":\"Zoe\"}"}]}`}
	recalled := organism.Slot{From: "keeper", PayloadType: "llm.result",
		Payload: `{"id":"2","name":"recall","content":"Zoe"}`}
	held := organism.Slot{From: "keeper", PayloadType: "llm.held-step",
		Payload: `{"calls":[{"id":"3","name":"remember","arguments":"{\"Content\":\"Zoe\"}"}]}`}
	request := organism.Slot{From: "keeper", To: "system.memory", PayloadType: "Remember",
		Payload: `<Remember><Content>Zoe</Content></Remember>`}
	decision := organism.Slot{From: "keeper", To: "system.memory", PayloadType: "decision",
		Payload: `<decision xmlns="https://xml-pipeline.org/ns/core/v1" decision="approved"/>`}
	unfold := organism.Slot{From: "keeper", PayloadType: "llm.calls",
		Payload: `{"calls":[{"id":"4","name":"context_unfold","arguments":"{}"}]}`}
	other := organism.Slot{From: "keeper", PayloadType: "llm.calls",
		Payload: `{"calls":[{"id":"5","name":"files","arguments":"{}"}]}`}
	task := organism.Slot{From: "websocket:alice", To: "keeper", PayloadType: "KeeperTask",
		Payload: `<KeeperTask><Text>hi</Text></KeeperTask>`}
	for _, tc := range []struct {
		name  string
		slots []organism.Slot
		reads bool
		want  []string
	}{
		{"loop records", []organism.Slot{task, remember, recalled, other}, false,
			[]string{task.Payload, w, w, other.Payload}},
		{"held step", []organism.Slot{held}, false, []string{w}},
		{"memory traffic and its decision", []organism.Slot{request, decision}, false, []string{w, decision.Payload}},
		{"unfold of a history holding memory", []organism.Slot{remember, unfold}, false, []string{w, w}},
		{"unfold of a history without memory", []organism.Slot{task, unfold}, false,
			[]string{task.Payload, unfold.Payload}},
		{"the owner", []organism.Slot{remember, recalled, held, unfold}, true,
			[]string{remember.Payload, recalled.Payload, held.Payload, unfold.Payload}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &memoryReader{sess: auth.Session{Username: "olga", Role: auth.Operator},
				owners: map[string]bool{"c1": tc.reads}}
			got := r.historyPayloads("c1", organism.History{ID: "c1", Slots: tc.slots})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("payloads (-want +got):\n%s", diff)
			}
		})
	}
}
