package bus

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

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// nativeModel is a loopback OpenAI-protocol model whose replies are native
// tool calls ("call:NAME:ARGS") or text; the last one repeats.
type nativeModel struct {
	*httptest.Server
	mu     sync.Mutex
	script []string
	bodies []string
}

func newNativeModel(t *testing.T, script ...string) *nativeModel {
	m := &nativeModel{script: script}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		m.mu.Lock()
		text := m.script[min(len(m.bodies), len(m.script)-1)]
		m.bodies = append(m.bodies, string(b))
		m.mu.Unlock()
		msg, finish := map[string]any{"role": "assistant", "content": text}, "stop"
		if rest, ok := strings.CutPrefix(text, "call:"); ok {
			name, args, _ := strings.Cut(rest, ":")
			msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": fmt.Sprintf("call_%d", len(m.bodies)), "type": "function",
				"function": map[string]any{"name": name, "arguments": args}}}}
			finish = "tool_calls"
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": msg,
			"finish_reason": finish}}})
	}))
	t.Cleanup(m.Close)
	return m
}

func (m *nativeModel) requests() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.bodies...)
}

const memoryYAML = `organism: {name: remembering}
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

// rememberingOrganism builds the keeper organism over m.
func rememberingOrganism(t *testing.T, m *nativeModel) buildFunc {
	dir := t.TempDir()
	t.Setenv("TEST_LLM_KEY", "sk-test")
	path := filepath.Join(dir, "organism.yaml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(memoryYAML, m.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	return func(o organism.Options) (*organism.Organism, error) { return organism.Load(path, o) }
}

// TestMemoryOverTheAPI: a remember call under consent ask is pushed as an
// approval of kind memory; approved over the API it is stored in the
// sender's space, which GET /api/v1/memory shows to that user only (an
// admin may list everyone's) and DELETE /api/v1/memory/{id} lets that
// user delete.
func TestMemoryOverTheAPI(t *testing.T) {
	m := newNativeModel(t, `call:remember:{"Content":"Prefers answers in French"}`, "Noted.")
	f := newFixtureWith(t, rememberingOrganism(t, m))
	tok := f.tokens()
	ws := f.dial("/ws", tok[auth.Operator])
	readUntil(t, ws, "connected")

	conv := sendOver(t, ws, "keeper", "answer me in French from now on")
	pushed := readUntil(t, ws, "approval")["approval"].(map[string]any)
	if pushed["kind"] != "memory" || pushed["thread_id"] != conv || pushed["agent"] != "keeper" ||
		pushed["target"] != "system.memory" || !strings.Contains(pushed["payload"].(string), "Prefers answers in French") {
		t.Fatalf("approval frame %v", pushed)
	}
	if _, body, _ := f.do("GET", "/api/v1/memory", tok[auth.Operator], nil); len(body["memories"].([]any)) != 0 {
		t.Fatalf("stored before the consent: %v", body)
	}
	id := pushed["id"].(string)
	if status, body, _ := f.do("POST", "/api/v1/approvals/"+id, tok[auth.Operator],
		map[string]string{"decision": "approve"}); status != http.StatusOK {
		t.Fatalf("approve: %d %v", status, body)
	}
	if r := readUntil(t, ws, "reply"); r["text"] != "Noted." || r["thread_id"] != conv {
		t.Fatalf("reply %v", r)
	}
	reqs := m.requests()
	if last := reqs[len(reqs)-1]; !strings.Contains(last, "approved by user-operator") {
		t.Fatalf("the model's last request %s", last)
	}

	status, body, _ := f.do("GET", "/api/v1/memory", tok[auth.Operator], nil)
	list, _ := body["memories"].([]any)
	if status != http.StatusOK || len(list) != 1 {
		t.Fatalf("GET memory: %d %v", status, body)
	}
	mem := list[0].(map[string]any)
	if mem["user"] != "user-operator" || mem["agent"] != "keeper" || mem["content"] != "Prefers answers in French" ||
		mem["consent"] != id || mem["thread_id"] != conv || mem["created_at"] == "" {
		t.Fatalf("memory %v", mem)
	}
	memID := mem["id"].(string)
	if _, body, _ := f.do("GET", "/api/v1/memory?q=french", tok[auth.Operator], nil); len(body["memories"].([]any)) != 1 {
		t.Fatalf("search: %v", body)
	}
	if _, body, _ := f.do("GET", "/api/v1/memory?q=german", tok[auth.Operator], nil); len(body["memories"].([]any)) != 0 {
		t.Fatalf("search for what is not there: %v", body)
	}
	for _, tc := range []struct {
		method, path, token string
		want, n             int
	}{
		{"GET", "/api/v1/memory", tok[auth.Viewer], http.StatusOK, 0},
		{"GET", "/api/v1/memory?all=true", tok[auth.Viewer], http.StatusForbidden, -1},
		{"GET", "/api/v1/memory?user=user-operator", tok[auth.Viewer], http.StatusForbidden, -1},
		{"GET", "/api/v1/memory?limit=0", tok[auth.Operator], http.StatusBadRequest, -1},
		{"GET", "/api/v1/memory?all=true", tok[auth.Admin], http.StatusOK, 1},
		{"GET", "/api/v1/memory?user=user-operator", tok[auth.Admin], http.StatusOK, 1},
		{"GET", "/api/v1/memory", tok[auth.Admin], http.StatusOK, 0},
		{"GET", "/api/v1/memory", "", http.StatusUnauthorized, -1},
		{"DELETE", "/api/v1/memory/" + memID, tok[auth.Viewer], http.StatusNotFound, -1},
		{"DELETE", "/api/v1/memory/nope", tok[auth.Operator], http.StatusNotFound, -1},
	} {
		status, body, _ := f.do(tc.method, tc.path, tc.token, nil)
		if status != tc.want {
			t.Fatalf("%s %s: %d %v, want %d", tc.method, tc.path, status, body, tc.want)
		}
		if tc.n >= 0 && len(body["memories"].([]any)) != tc.n {
			t.Fatalf("%s %s: %v, want %d memories", tc.method, tc.path, body, tc.n)
		}
	}
	status, body, _ = f.do("DELETE", "/api/v1/memory/"+memID, tok[auth.Operator], nil)
	if status != http.StatusOK || body["deleted"].(map[string]any)["id"] != memID {
		t.Fatalf("DELETE: %d %v", status, body)
	}
	if _, body, _ := f.do("GET", "/api/v1/memory?all=true", tok[auth.Admin], nil); len(body["memories"].([]any)) != 0 {
		t.Fatalf("after the delete: %v", body)
	}
	if status, _, _ := f.do("DELETE", "/api/v1/memory/"+memID, tok[auth.Operator], nil); status != http.StatusNotFound {
		t.Fatalf("second DELETE: %d", status)
	}
}
