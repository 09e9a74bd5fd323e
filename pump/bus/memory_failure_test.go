package bus

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// shrunkMemoryYAML is memoryYAML with max_bytes too small for what the
// test's agent asks to remember.
const shrunkMemoryYAML = `organism: {name: remembering}
memory: {consent: ask, max_bytes: 16}
llm:
  retries: 0
  backends:
    - provider: openai
      api_key_env: TEST_LLM_KEY
      base_url: %s
      model: gpt-test
listeners:
  - name: keeper
    agent: true
    description: Keeps notes about its users
    prompt: You are keeper.
    memory: true
`

// TestMemoryFailureIsTheOwners: a memory request that fails at the memory
// listener (here: the organism's max_bytes shrank while it waited for its
// approval) leaves failures that quote it — the <huh> its agent is told,
// whose original attempt is the request itself, and the listener's error.
// To anyone but the conversation's owner and admins they show that the
// failure happened, not what it quotes: the conversation's messages
// (REST), GET /api/v1/threads/{id}'s "error" and the /api/v1/ws stream's
// error event say "withheld":"memory".
func TestMemoryFailureIsTheOwners(t *testing.T) {
	const secret = "Zoe"
	m := newNativeModel(t, `call:remember:{"Content":"Alice's daughter is called `+secret+`"}`, "Noted.")
	dir := t.TempDir()
	t.Setenv("TEST_LLM_KEY", "sk-test")
	path := filepath.Join(dir, "organism.yaml")
	write := func(yaml string) {
		if err := os.WriteFile(path, []byte(fmt.Sprintf(yaml, m.URL)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(memoryYAML)
	f := newFixtureWith(t, func(o organism.Options) (*organism.Organism, error) { return organism.Load(path, o) })
	tok := f.tokens()
	readers := map[string]string{"alice": tok[auth.Operator], "olga": f.loginAs("olga", auth.Operator),
		"viewer": tok[auth.Viewer], "admin": tok[auth.Admin]}
	sees := map[string]bool{"alice": true, "admin": true}
	streams := map[string]*websocket.Conn{}
	for name, token := range readers {
		streams[name] = f.dial("/api/v1/ws", token)
		readEvent(t, streams[name], "connected")
	}
	completed := f.watchCompletions()
	ws := f.dial("/ws", readers["alice"])
	readUntil(t, ws, "connected")
	conv := sendOver(t, ws, "keeper", "remember my daughter's name")
	id := readUntil(t, ws, "approval")["approval"].(map[string]any)["id"].(string)
	// While it waits, the organism's memory shrinks below what it holds:
	// released, it fails at the memory listener.
	write(shrunkMemoryYAML)
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.org.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	if status, body, _ := f.do("POST", "/api/v1/approvals/"+id, readers["alice"],
		map[string]string{"decision": "approve"}); status != http.StatusOK {
		t.Fatalf("approve: %d %v", status, body)
	}
	completed.wait(t, conv)
	f.waitJournal()

	for name, token := range readers {
		// The failures among the conversation's messages.
		status, body, _ := f.do("GET", "/api/v1/threads/"+conv+"/messages?scope=conversation", token, nil)
		if status != http.StatusOK {
			t.Fatalf("%s: messages: %d %v", name, status, body)
		}
		huhs, quoted := 0, false
		for _, v := range body["messages"].([]any) {
			msg := v.(map[string]any)
			if msg["kind"] != "huh" {
				continue
			}
			huhs++
			raw, _ := json.Marshal(msg)
			got := strings.Contains(revealed(msg["payload"].(string)), secret)
			if got && !sees[name] {
				t.Errorf("%s: the memory's text in the failure:\n%s", name, raw)
			}
			quoted = quoted || got
			if withheld := msg["withheld"] == "memory"; withheld == sees[name] {
				t.Errorf("%s: the failure %s (withheld: want %v)", name, raw, !sees[name])
			}
		}
		if huhs == 0 || sees[name] && !quoted {
			t.Errorf("%s: %d failures among the messages, quoting the request: %v: %v", name, huhs, quoted, body)
		}

		// The thread's status and error.
		status, th, _ := f.do("GET", "/api/v1/threads/"+conv, token, nil)
		if status != http.StatusOK {
			t.Fatalf("%s: thread: %d %v", name, status, th)
		}
		raw, _ := json.Marshal(th)
		if th["status"] != statusError || th["error"] == "" {
			t.Errorf("%s: the thread %s, want status error with its error", name, raw)
		}
		if withheld := th["withheld"] == "memory"; withheld == sees[name] || !sees[name] && th["error"] != withheldMemoryText {
			t.Errorf("%s: the thread %s (withheld: want %v)", name, raw, !sees[name])
		}

		// The stream's error event of the failure the agent was told.
		for {
			e := readEvent(t, streams[name], "error")
			if e["thread_id"] != conv || e["kind"] != "huh" {
				continue
			}
			raw, _ := json.Marshal(e)
			if withheld := e["withheld"] == "memory"; withheld == sees[name] {
				t.Errorf("%s: the error event %s (withheld: want %v)", name, raw, !sees[name])
			}
			break
		}
	}
}

// revealed is payload with the base64 original attempt of a <huh> in it
// decoded (what anyone reading the payload can read).
func revealed(payload string) string {
	out := payload
	for _, part := range strings.Split(payload, "<original-attempt>")[1:] {
		text, _, _ := strings.Cut(part, "</original-attempt>")
		if dec, err := base64.StdEncoding.DecodeString(text); err == nil {
			out += "\n" + string(dec)
		}
	}
	return out
}

// unfoldingMemoryYAML is an organism whose agent keeper, with memory stored
// without asking and a librarian, may read its folded history back with
// context_unfold.
const unfoldingMemoryYAML = `organism: {name: remembering}
memory: {consent: always}
llm:
  retries: 0
  backends:
    - provider: openai
      api_key_env: TEST_LLM_KEY
      base_url: %s
      model: gpt-test
listeners:
  - name: keeper
    agent: true
    description: Keeps notes about its users
    prompt: You are keeper.
    memory: true
    librarian: {keep_recent: 1, min_fold_tokens: 16}
`

// TestMemoryUnfoldedIsTheOwners: an agent that unfolds a part of its
// history holding what it asked to remember (context_unfold) copies that
// text into the unfold's result, and its list of folded parts quotes their
// summaries. In the context history (GET /api/v1/threads/{id}/context) such
// a segment — its content and its summary — is withheld from anyone but
// the conversation's owner and admins, like the remember call itself.
func TestMemoryUnfoldedIsTheOwners(t *testing.T) {
	const secret = "Zoe"
	m := newNativeModel(t, `call:remember:{"Content":"Alice's daughter is called `+secret+`"}`,
		`call:context_unfold:{"id":"s1"}`, "Noted.")
	dir := t.TempDir()
	t.Setenv("TEST_LLM_KEY", "sk-test")
	path := filepath.Join(dir, "organism.yaml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(unfoldingMemoryYAML, m.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	f := newFixtureWith(t, func(o organism.Options) (*organism.Organism, error) { return organism.Load(path, o) })
	tok := f.tokens()
	readers := map[string]string{"alice": tok[auth.Operator], "olga": f.loginAs("olga", auth.Operator),
		"viewer": tok[auth.Viewer], "admin": tok[auth.Admin]}
	sees := map[string]bool{"alice": true, "admin": true}
	ws := f.dial("/ws", readers["alice"])
	readUntil(t, ws, "connected")
	conv := sendOver(t, ws, "keeper", "remember my daughter's name")
	if r := readUntil(t, ws, "reply"); r["text"] != "Noted." {
		t.Fatalf("reply %v", r)
	}
	for name, token := range readers {
		status, body, _ := f.do("GET", "/api/v1/threads/"+conv+"/context?content=full", token, nil)
		if status != http.StatusOK {
			t.Fatalf("%s: context: %d %v", name, status, body)
		}
		raw, _ := json.Marshal(body)
		if strings.Contains(string(raw), secret) != sees[name] {
			t.Errorf("%s: the memory's text in the context: %v, want %v:\n%s", name, !sees[name], sees[name], raw)
		}
		withheld := map[string]bool{}
		for _, v := range body["segments"].([]any) {
			if sg := v.(map[string]any); sg["withheld"] == "memory" {
				withheld[sg["id"].(string)] = true
			}
		}
		// The remember call (s1) and the unfold of it (s4).
		if want := map[bool]int{true: 0, false: 2}[sees[name]]; len(withheld) != want {
			t.Errorf("%s: segments withheld %v, want %d:\n%s", name, withheld, want, raw)
		}
	}
}
