package bus

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"
	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// loopModel is a loopback OpenAI-protocol model: each request gets the next
// reply of its script (the last repeats), and every request is kept.
type loopModel struct {
	*httptest.Server
	mu      sync.Mutex
	script  []string
	bodies  []string
	answers int
}

func newLoopModel(t *testing.T, script ...string) *loopModel {
	m := &loopModel{script: script}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		m.mu.Lock()
		m.bodies = append(m.bodies, string(b))
		text := m.script[min(m.answers, len(m.script)-1)]
		m.answers++
		m.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{
			"message": map[string]any{"role": "assistant", "content": text}, "finish_reason": "stop"}}})
	}))
	t.Cleanup(m.Close)
	return m
}

func (m *loopModel) requests() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.bodies...)
}

const governedYAML = `organism: {name: governed}
constitution: [CONSTITUTION.md]
llm:
  retries: 0
  backends:
    - provider: openai
      api_key_env: TEST_LLM_KEY
      base_url: %s
      model: gpt-test
listeners:
  - name: researcher
    agent: true
    description: Looks things up
    prompt: You are researcher.
    tools: [run_command]
    tool_config:
      run_command: {allowed_commands: [date]}
    approval: [run_command]
    tool_calling: xml             # the model writes <RunCommand> (native calls: pump/organism's tests)
`

const governedConstitution = `---
document_type: constitution
version: "1.0"
scope: all_agents
authority_level: supreme
rules:
  - id: no-rm-rf
    deny: '(?i)\brm\s+-rf\b'
    reason: Destructive shell commands are forbidden
    severity: high
---
# House rules
`

// governedOrganism builds the researcher organism over m.
func governedOrganism(t *testing.T, m *loopModel) buildFunc {
	return governedOrganismFrom(t, m, governedYAML)
}

// governedOrganismFrom is governedOrganism with the organism file yaml (a
// format of governedYAML).
func governedOrganismFrom(t *testing.T, m *loopModel, yaml string) buildFunc {
	dir := t.TempDir()
	t.Setenv("TEST_LLM_KEY", "sk-test")
	if err := os.WriteFile(filepath.Join(dir, "CONSTITUTION.md"), []byte(governedConstitution), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "organism.yaml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(yaml, m.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	return func(o organism.Options) (*organism.Organism, error) { return organism.Load(path, o) }
}

// readUntil reads frames until one of type typ arrives and returns it.
func readUntil(t *testing.T, c *websocket.Conn, typ string) frame {
	t.Helper()
	for {
		f := readFrame(t, c)
		if f["type"] == typ {
			return f
		}
	}
}

// readEvent reads /api/v1/ws events until one named name arrives.
func readEvent(t *testing.T, c *websocket.Conn, name string) frame {
	t.Helper()
	for {
		f := readFrame(t, c)
		if f["event"] == name {
			return f
		}
	}
}

// sendOver sends text to target over a /ws socket and returns the thread.
func sendOver(t *testing.T, c *websocket.Conn, target, text string) string {
	t.Helper()
	writeFrame(t, c, map[string]any{"type": "send", "id": 1, "target": target, "content": text})
	sent := readUntil(t, c, "sent")
	return sent["thread_id"].(string)
}

func TestApprovalsOverTheAPI(t *testing.T) {
	m := newLoopModel(t, "<RunCommand><Command>date</Command></RunCommand>", "It ran.",
		"<RunCommand><Command>date</Command></RunCommand>", "I was not allowed.")
	f := newFixtureWith(t, governedOrganism(t, m))
	tok := f.tokens()
	ws := f.dial("/ws", tok[auth.Operator])
	readUntil(t, ws, "connected")
	stream := f.dial("/api/v1/ws", tok[auth.Viewer])
	readEvent(t, stream, "connected")

	conv := sendOver(t, ws, "researcher", "what day is it?")
	pushed := readUntil(t, ws, "approval")["approval"].(map[string]any)
	id := pushed["id"].(string)
	if pushed["thread_id"] != conv || pushed["agent"] != "researcher" || pushed["target"] != "run_command" ||
		pushed["status"] != "pending" || !strings.Contains(pushed["payload"].(string), "<RunCommand") ||
		pushed["user"] != "user-operator" {
		t.Fatalf("approval frame %v", pushed)
	}
	status, body, _ := f.do("GET", "/api/v1/approvals?status=pending", tok[auth.Viewer], nil)
	list, _ := body["approvals"].([]any)
	if status != http.StatusOK || len(list) != 1 {
		t.Fatalf("GET approvals: %d %v", status, body)
	}
	got := list[0].(map[string]any)
	for _, k := range []string{"id", "thread_id", "user", "agent", "target", "payload", "created_at", "status"} {
		if got[k] == nil || got[k] == "" {
			t.Errorf("approval lacks %s: %v", k, got)
		}
	}
	if got["id"] != id {
		t.Fatalf("listed %v, pushed %s", got["id"], id)
	}
	if status, body, _ := f.do("GET", "/api/v1/approvals?thread="+conv, tok[auth.Viewer], nil); status != http.StatusOK ||
		len(body["approvals"].([]any)) != 1 {
		t.Fatalf("by thread: %d %v", status, body)
	}
	if n := len(m.requests()); n != 1 {
		t.Fatalf("%d model requests while the call waits, want 1", n)
	}
	for _, tc := range []struct {
		token string
		body  any
		want  int
	}{
		{tok[auth.Viewer], map[string]string{"decision": "approve"}, http.StatusForbidden},
		{tok[auth.Operator], map[string]string{"decision": "maybe"}, http.StatusBadRequest},
		{tok[auth.Operator], "{not json", http.StatusBadRequest},
	} {
		if status, body, _ := f.do("POST", "/api/v1/approvals/"+id, tc.token, tc.body); status != tc.want {
			t.Fatalf("POST %v: %d %v, want %d", tc.body, status, body, tc.want)
		}
	}
	if status, _, _ := f.do("POST", "/api/v1/approvals/nope", tok[auth.Operator], map[string]string{"decision": "deny"}); status != http.StatusNotFound {
		t.Fatalf("unknown approval: %d", status)
	}
	status, body, _ = f.do("POST", "/api/v1/approvals/"+id, tok[auth.Operator], map[string]string{"decision": "approve", "reason": "fine"})
	if status != http.StatusOK || body["status"] != "approved" || body["decided_by"] != "user-operator" {
		t.Fatalf("approve: %d %v", status, body)
	}
	if status, body, _ := f.do("POST", "/api/v1/approvals/"+id, tok[auth.Operator], map[string]string{"decision": "deny"}); status != http.StatusConflict ||
		body["error"] != "Approval "+id+" was approved already by user-operator (fine)" {
		t.Fatalf("second decision: %d %v, want 409 saying who approved it", status, body)
	}
	if r := readUntil(t, ws, "reply"); r["text"] != "It ran." || r["thread_id"] != conv {
		t.Fatalf("reply %v", r)
	}
	if e := readEvent(t, stream, "approval"); e["approval"].(map[string]any)["id"] != id {
		t.Fatalf("stream approval %v", e)
	}
	if e := readEvent(t, stream, "approval_decided"); e["approval"].(map[string]any)["status"] != "approved" {
		t.Fatalf("stream decision %v", e)
	}
	// The approval's decision is journaled in the conversation, which did
	// not fail for it: it lists as completed, not as error.
	readUntil(t, ws, "complete")
	if status, body, _ := f.do("GET", "/api/v1/threads/"+conv, tok[auth.Viewer], nil); status != http.StatusOK ||
		body["status"] != "completed" {
		t.Fatalf("thread of the approved call: %d %v, want completed", status, body)
	}
	status, body, _ = f.do("GET", "/api/v1/threads?status=error", tok[auth.Viewer], nil)
	if status != http.StatusOK || strings.Contains(fmt.Sprint(body), conv) {
		t.Fatalf("threads in error: %d %v, want none with %s", status, body, conv)
	}

	// A denied call comes back to the agent as a refusal.
	conv2 := sendOver(t, ws, "researcher", "and now?")
	id2 := readUntil(t, ws, "approval")["approval"].(map[string]any)["id"].(string)
	status, body, _ = f.do("POST", "/api/v1/approvals/"+id2, tok[auth.Operator], map[string]string{"decision": "deny", "reason": "not now"})
	if status != http.StatusOK || body["status"] != "denied" {
		t.Fatalf("deny: %d %v", status, body)
	}
	if r := readUntil(t, ws, "reply"); r["text"] != "I was not allowed." || r["thread_id"] != conv2 {
		t.Fatalf("reply %v", r)
	}
	reqs := m.requests()
	if last := reqs[len(reqs)-1]; !strings.Contains(last, "refused") || !strings.Contains(last, "denied by user-operator: not now") {
		t.Fatalf("the model's last request %s", last)
	}

	// A deny rule refuses before the model sees anything.
	before := len(m.requests())
	conv3 := sendOver(t, ws, "researcher", "please rm -rf /")
	r := readUntil(t, ws, "reply")
	if r["thread_id"] != conv3 || r["payload_type"] != "refusal" || !strings.Contains(r["payload"].(string), "<violated-rule>no-rm-rf</violated-rule>") {
		t.Fatalf("refusal reply %v", r)
	}
	if after := len(m.requests()); after != before {
		t.Fatalf("the model got %d more requests", after-before)
	}
}

func TestHaltOverTheAPI(t *testing.T) {
	f := newFixture(t)
	tok := f.tokens()
	ws := f.dial("/ws", tok[auth.Viewer])
	readUntil(t, ws, "connected")
	if status, _, _ := f.do("POST", "/api/v1/organism/halt", tok[auth.Operator], nil); status != http.StatusForbidden {
		t.Fatalf("operator halt: %d", status)
	}
	if status, _, _ := f.do("POST", "/api/v1/organism/halt", tok[auth.Admin], map[string]string{"scope": "some"}); status != http.StatusBadRequest {
		t.Fatalf("bad scope: %d", status)
	}
	status, body, _ := f.do("POST", "/api/v1/organism/halt", tok[auth.Admin], nil)
	if status != http.StatusOK || body["status"] != "halted" || body["scope"] != "agents" {
		t.Fatalf("halt: %d %v", status, body)
	}
	if h := readUntil(t, ws, "halted"); h["scope"] != "agents" || h["by"] != "user-admin" {
		t.Fatalf("halted frame %v", h)
	}
	if _, body, _ := f.do("GET", "/api/v1/organism", tok[auth.Viewer], nil); body["status"] != "halted" {
		t.Fatalf("organism status %v", body["status"])
	}
	status, body, _ = f.do("POST", "/api/v1/organism/resume", tok[auth.Admin], nil)
	if status != http.StatusOK || body["status"] != "running" || body["resumed"] != true {
		t.Fatalf("resume: %d %v", status, body)
	}
	readUntil(t, ws, "resumed")
	if _, body, _ := f.do("GET", "/api/v1/organism", tok[auth.Viewer], nil); body["status"] != "running" {
		t.Fatalf("organism status %v", body["status"])
	}
	if _, body, _ = f.do("POST", "/api/v1/organism/resume", tok[auth.Admin], nil); body["resumed"] != false {
		t.Fatalf("second resume %v", body)
	}
}

// One listener halted over the API: admin only, an unknown name is a 404,
// the organism still reads running and names it, the listener reads
// halted, and a resume naming it lifts its halt alone.
func TestHaltListenerOverTheAPI(t *testing.T) {
	f := newFixture(t)
	tok := f.tokens()
	ws := f.dial("/ws", tok[auth.Viewer])
	readUntil(t, ws, "connected")
	halt := map[string]string{"listener": "shouter"}
	if status, _, _ := f.do("POST", "/api/v1/organism/halt", tok[auth.Operator], halt); status != http.StatusForbidden {
		t.Fatalf("operator halt: %d", status)
	}
	if status, body, _ := f.do("POST", "/api/v1/organism/halt", tok[auth.Admin], map[string]string{"listener": "nobody"}); status != http.StatusNotFound || body["error"] != "No listener named nobody" {
		t.Fatalf("unknown listener: %d %v", status, body)
	}
	if status, _, _ := f.do("POST", "/api/v1/organism/halt", tok[auth.Admin], map[string]string{"listener": "shouter", "scope": "all"}); status != http.StatusBadRequest {
		t.Fatalf("scope and listener: %d", status)
	}
	status, body, _ := f.do("POST", "/api/v1/organism/halt", tok[auth.Admin], halt)
	if status != http.StatusOK || body["status"] != "halted" || body["listener"] != "shouter" {
		t.Fatalf("halt: %d %v", status, body)
	}
	if h := readUntil(t, ws, "halted"); h["scope"] != "listener" || h["listener"] != "shouter" || h["by"] != "user-admin" {
		t.Fatalf("halted frame %v", h)
	}
	_, body, _ = f.do("GET", "/api/v1/organism", tok[auth.Viewer], nil)
	if diff := cmp.Diff(map[string]any{"status": "running", "halted_listeners": []any{"shouter"}},
		map[string]any{"status": body["status"], "halted_listeners": body["halted_listeners"]}); diff != "" {
		t.Fatalf("organism while shouter is halted (-want +got):\n%s", diff)
	}
	if _, body, _ := f.do("GET", "/api/v1/agents/shouter", tok[auth.Viewer], nil); body["state"] != "halted" {
		t.Fatalf("shouter's state %v", body["state"])
	}
	if _, body, _ := f.do("GET", "/api/v1/agents/greeter", tok[auth.Viewer], nil); body["state"] == "halted" {
		t.Fatalf("greeter's state %v", body["state"])
	}
	status, body, _ = f.do("POST", "/api/v1/organism/resume", tok[auth.Admin], halt)
	if status != http.StatusOK || body["resumed"] != true || body["listener"] != "shouter" {
		t.Fatalf("resume: %d %v", status, body)
	}
	if r := readUntil(t, ws, "resumed"); r["listener"] != "shouter" {
		t.Fatalf("resumed frame %v", r)
	}
	if _, body, _ = f.do("GET", "/api/v1/organism", tok[auth.Viewer], nil); body["halted_listeners"] != nil {
		t.Fatalf("halted listeners after the resume %v", body["halted_listeners"])
	}
}

func TestDashboardApprovesAndHalts(t *testing.T) {
	m := newLoopModel(t, "<RunCommand><Command>date</Command></RunCommand>", "It ran.")
	f := newFixtureWith(t, governedOrganism(t, m))
	ctx := browser(t)
	secret := f.user("ada", auth.Admin)
	pending := css(`#approvals li[data-approval]`)
	run(t, ctx, "login, send, wait for the approval", chromedp.Steps(
		f.loginSteps("ada", secret),
		chromedp.SendKeys(css("#send-input"), "@researcher what day is it?"),
		chromedp.Click(css("#send-form button")),
		chromedp.WaitVisible(pending),
	))
	id := run(t, ctx, "approval id", chromedp.AttributeValue(pending, "data-approval")).Value
	text := textOf(t, ctx, "approval text", pending)
	if !strings.Contains(text, "researcher → run_command") || !strings.Contains(text, "<RunCommand") ||
		!regexp.MustCompile(`in ada's conversation [0-9a-f]{8}`).MatchString(text) {
		t.Fatalf("the dashboard shows %q", text)
	}
	run(t, ctx, "approve", chromedp.Steps(
		chromedp.Click(css(`#approvals li[data-approval="`+id+`"] button[data-decision="approve"]`)),
		chromedp.WaitNotPresent(css(`#approvals li[data-approval="`+id+`"]`)),
	))
	a, err := f.org.Governance().Approval(t.Context(), id)
	if err != nil || a.Status != organism.StatusApproved || a.DecidedBy != "ada" {
		t.Fatalf("after the click: %+v %v", a, err)
	}
	run(t, ctx, "halt and resume", chromedp.Steps(
		chromedp.Click(css(`#halt-button[data-action="halt"]`)),
		chromedp.WaitVisible(css(`#org-status[data-status="halted"]`)),
	))
	if _, halted := f.org.Pump.Halted(); !halted {
		t.Fatal("the halt button did not halt the organism")
	}
	run(t, ctx, "resume", chromedp.Steps(
		chromedp.Click(css(`#halt-button[data-action="resume"]`)),
		chromedp.WaitVisible(css(`#org-status[data-status="running"]`)),
	))
	if _, halted := f.org.Pump.Halted(); halted {
		t.Fatal("the resume button did not resume the organism")
	}
}
