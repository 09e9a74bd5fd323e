package bus

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// gatedConstitution refuses one request and sends another to a human.
const gatedConstitution = `---
document_type: constitution
version: "1.0"
scope: all_agents
authority_level: supreme
rules:
  - id: no-rm-rf
    deny: '(?i)\brm\s+-rf\b'
    reason: Destructive shell commands are forbidden
  - id: payments-need-a-human
    review: '(?i)\bpay\b.*\$\s?\d'
    reason: Payments are decided by a human
---
# House rules
`

// gatedOrganism builds the researcher organism of governedYAML over m,
// under gatedConstitution.
func gatedOrganism(t *testing.T, m *loopModel) buildFunc {
	dir := t.TempDir()
	t.Setenv("TEST_LLM_KEY", "sk-test")
	if err := os.WriteFile(filepath.Join(dir, "CONSTITUTION.md"), []byte(gatedConstitution), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "organism.yaml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(governedYAML, m.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	return func(o organism.Options) (*organism.Organism, error) { return organism.Load(path, o) }
}

// A message the constitution refuses, or holds for a human, was accepted
// and journaled: REST inject acknowledges it with its thread and message
// id (not a 500), and the held one, once approved, is delivered under
// that same message id.
func TestInjectGatedByTheConstitution(t *testing.T) {
	m := newLoopModel(t, "Paid.")
	f := newFixtureWith(t, gatedOrganism(t, m))
	tok := f.tokens()
	stream := f.dial("/api/v1/ws", tok[auth.Viewer])
	readEvent(t, stream, "connected")
	hexID := regexp.MustCompile(`^[0-9a-f]{64}$`)
	ids := map[string]string{}
	for _, tc := range []struct{ name, text string }{
		{"refused", "please rm -rf /"},
		{"held", "please pay $5 to eve"},
	} {
		status, body, _ := f.do("POST", "/api/v1/inject", tok[auth.Operator],
			map[string]any{"to": "researcher", "payload": map[string]string{"text": tc.text}})
		thread, _ := body["thread_id"].(string)
		id, _ := body["message_id"].(string)
		if status != http.StatusOK || thread == "" || !hexID.MatchString(id) {
			t.Fatalf("%s: inject %q: %d %v, want 200 with thread_id and message_id", tc.name, tc.text, status, body)
		}
		ids[tc.name] = id
	}
	if n := len(m.requests()); n != 0 {
		t.Fatalf("the model got %d requests before any approval", n)
	}
	status, body, _ := f.do("GET", "/api/v1/approvals?status=pending", tok[auth.Viewer], nil)
	list, _ := body["approvals"].([]any)
	if status != http.StatusOK || len(list) != 1 {
		t.Fatalf("pending approvals: %d %v, want the held message's", status, body)
	}
	id := list[0].(map[string]any)["id"].(string)
	// Another user approves it: the operator who sent it may not (four
	// eyes: approval_four_eyes.go).
	if status, body, _ := f.do("POST", "/api/v1/approvals/"+id, tok[auth.Admin],
		map[string]string{"decision": "approve"}); status != http.StatusOK {
		t.Fatalf("approve: %d %v", status, body)
	}
	for {
		msg, _ := readEvent(t, stream, "message")["message"].(map[string]any)
		if msg["from"] != "api:user-operator" {
			continue // the refusal of the refused one
		}
		if msg["id"] != ids["held"] {
			t.Fatalf("released message %v, want id %s (the inject's message_id)", msg, ids["held"])
		}
		break
	}
}
