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

// memoryModel is a loopback model for an agent with memory: it calls
// remember until it sees that the memory was stored, then answers.
type memoryModel struct {
	*httptest.Server
	mu     sync.Mutex
	stored int
}

func newMemoryModel(t *testing.T) *memoryModel {
	m := &memoryModel{}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		msg := map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"id": "call_rem", "type": "function", "function": map[string]any{"name": "remember",
				"arguments": `{"Content":"The user's favourite season is autumn"}`}}}}
		finish := "tool_calls"
		if strings.Contains(string(b), "Remembered as memory") {
			m.mu.Lock()
			m.stored++
			m.mu.Unlock()
			msg, finish = map[string]any{"role": "assistant", "content": "Kept after the crash."}, "stop"
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": msg,
			"finish_reason": finish}}})
	}))
	t.Cleanup(m.Close)
	return m
}

func (m *memoryModel) storedSeen() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stored
}

const memoryOrganism = `organism: {name: remembering}
memory: {consent: ask}
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

// TestMemoryConsentSurvivesKill9: a memory waiting for consent is still
// waiting, and still not stored, after `xmlpipe run` is killed with
// SIGKILL and started again; approved then, it is stored (GET
// /api/v1/memory lists it with the approval as its consent) and the agent
// answers.
func TestMemoryConsentSurvivesKill9(t *testing.T) {
	m := newMemoryModel(t)
	dir := t.TempDir()
	t.Setenv("TEST_LLM_KEY", "sk-test")
	if err := os.WriteFile(filepath.Join(dir, "organism.yaml"), []byte(fmt.Sprintf(memoryOrganism, m.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	s := startRun(t, dir, data, "--insecure-dev")
	status, body := s.call(t, "POST", "/api/v1/inject", "", map[string]any{"to": "keeper",
		"payload": map[string]string{"Text": "remember that I love autumn"}})
	if status != http.StatusOK && status != http.StatusAccepted {
		t.Fatalf("inject: %d %v", status, body)
	}
	before := pendingApprovals(t, s, 1)[0].(map[string]any)
	if before["kind"] != "memory" || before["target"] != "system.memory" {
		t.Fatalf("approval %v", before)
	}
	if err := s.cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	s.wait(t)

	s = startRun(t, dir, data, "--insecure-dev")
	after := pendingApprovals(t, s, 1)[0].(map[string]any)
	if after["id"] != before["id"] || after["kind"] != "memory" {
		t.Fatalf("after the restart %v, before %v", after, before)
	}
	if _, body := s.call(t, "GET", "/api/v1/memory", "", nil); len(body["memories"].([]any)) != 0 {
		t.Fatalf("stored without consent: %v", body)
	}
	status, body = s.call(t, "POST", "/api/v1/approvals/"+after["id"].(string), "", map[string]string{"decision": "approve"})
	if status != http.StatusOK || body["status"] != "approved" {
		t.Fatalf("approve: %d %v", status, body)
	}
	deadline := time.Now().Add(30 * time.Second)
	for m.storedSeen() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the agent never heard its memory was stored\nstderr:\n%s", s.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, body = s.call(t, "GET", "/api/v1/memory", "", nil)
	list := body["memories"].([]any)
	if len(list) != 1 {
		t.Fatalf("memories after the approval: %v", body)
	}
	if mem := list[0].(map[string]any); mem["content"] != "The user's favourite season is autumn" || mem["consent"] != after["id"] {
		t.Fatalf("memory %v", mem)
	}
}
