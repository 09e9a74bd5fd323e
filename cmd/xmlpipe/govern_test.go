package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// approvalModel is a loopback model for an agent that calls run_command:
// it asks for the command until it sees the command's result, then answers.
type approvalModel struct {
	*httptest.Server
	mu       sync.Mutex
	requests int
	results  int
}

func newApprovalModel(t *testing.T) *approvalModel {
	m := &approvalModel{}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		text := "<RunCommand><Command>date</Command></RunCommand>"
		m.mu.Lock()
		m.requests++
		if strings.Contains(string(b), `\"ExitCode\":0`) { // the result reaches the agent as JSON
			m.results++
			text = "It ran after the crash."
		}
		m.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{
			"message": map[string]any{"role": "assistant", "content": text}, "finish_reason": "stop"}}})
	}))
	t.Cleanup(m.Close)
	return m
}

func (m *approvalModel) counts() (requests, results int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.requests, m.results
}

const approvalOrganism = `organism: {name: governed}
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

// pendingApprovals polls GET /api/v1/approvals?status=pending until it
// lists n approvals, and returns them.
func pendingApprovals(t *testing.T, s *servedBus, n int) []any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		status, body := s.call(t, "GET", "/api/v1/approvals?status=pending", "", nil)
		if list, _ := body["approvals"].([]any); status == http.StatusOK && len(list) == n {
			return list
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no %d pending approvals\nstderr:\n%s", n, s.stderr)
	return nil
}

// TestApprovalSurvivesKill9: a call waiting for approval is still waiting
// after `xmlpipe run` is killed with SIGKILL and started again (the same
// approval, no duplicate), and approving it then runs the call.
func TestApprovalSurvivesKill9(t *testing.T) {
	m := newApprovalModel(t)
	dir := t.TempDir()
	t.Setenv("TEST_LLM_KEY", "sk-test")
	if err := os.WriteFile(filepath.Join(dir, "organism.yaml"), []byte(fmt.Sprintf(approvalOrganism, m.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	s := startRun(t, dir, data, "--insecure-dev")
	status, body := s.call(t, "POST", "/api/v1/inject", "", map[string]any{"to": "researcher",
		"payload": map[string]string{"Text": "what day is it?"}})
	if status != http.StatusOK && status != http.StatusAccepted {
		t.Fatalf("inject: %d %v", status, body)
	}
	conv := body["thread_id"].(string)
	before := pendingApprovals(t, s, 1)[0].(map[string]any)
	if before["thread_id"] != conv || before["target"] != "run_command" {
		t.Fatalf("approval %v", before)
	}
	if err := s.cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	s.wait(t)
	if _, results := m.counts(); results != 0 {
		t.Fatal("the command ran before it was approved")
	}

	s = startRun(t, dir, data, "--insecure-dev")
	after := pendingApprovals(t, s, 1)[0].(map[string]any)
	if after["id"] != before["id"] || after["thread_id"] != conv || after["created_at"] != before["created_at"] {
		t.Fatalf("after the restart %v, before %v", after, before)
	}
	status, body = s.call(t, "POST", "/api/v1/approvals/"+after["id"].(string), "", map[string]string{"decision": "approve"})
	if status != http.StatusOK || body["status"] != "approved" {
		t.Fatalf("approve: %d %v", status, body)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, results := m.counts(); results > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the approved call did not run after the restart\nstderr:\n%s", s.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, body = s.call(t, "GET", "/api/v1/approvals", "", nil)
	if list := body["approvals"].([]any); len(list) != 1 {
		t.Fatalf("approvals after the restart: %v (want the one, no duplicate)", list)
	}
}
