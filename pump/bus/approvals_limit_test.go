package bus

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// TestProfiledApprovalsLimit: ?limit=N counts the approvals a user with a
// profile may see: a newer approval outside their profile (the
// researcher's, for a user without one) does not take the place of theirs.
func TestProfiledApprovalsLimit(t *testing.T) {
	m := newLoopModel(t, "<Calculate><Expression>6*7</Expression></Calculate>",
		"<RunCommand><Command>date</Command></RunCommand>", "Done.")
	dir := t.TempDir()
	t.Setenv("TEST_LLM_KEY", "sk-test")
	if err := os.WriteFile(filepath.Join(dir, "CONSTITUTION.md"), []byte(governedConstitution), 0o600); err != nil {
		t.Fatal(err)
	}
	yaml := fmt.Sprintf(governedYAML, m.URL) + `  - name: calculate
    payload_class: tools.Calculate
    handler: tools.Calculate
    description: Evaluates arithmetic
  - name: counter
    agent: true
    description: Counts
    prompt: You are counter.
    peers: [calculate]
    approval: [calculate]
    tool_calling: xml
profiles:
  calc:
    listeners: [counter, calculate]
`
	path := filepath.Join(dir, "organism.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	f := newFixtureWith(t, func(o organism.Options) (*organism.Organism, error) { return organism.Load(path, o) })
	secret := f.user("calcuser", auth.Operator)
	if err := f.auth.SetProfile(context.Background(), "calcuser", "calc"); err != nil {
		t.Fatal(err)
	}
	calc := f.login("calcuser", secret)
	f.nextStep()
	open := f.loginAs("open", auth.Operator)

	cws := f.dial("/ws", calc)
	readUntil(t, cws, "connected")
	sendOver(t, cws, "counter", "six times seven?")
	mine := readUntil(t, cws, "approval")["approval"].(map[string]any)["id"].(string)
	ows := f.dial("/ws", open)
	readUntil(t, ows, "connected")
	sendOver(t, ows, "researcher", "what day is it?")
	for {
		if a := readUntil(t, ows, "approval")["approval"].(map[string]any); a["agent"] == "researcher" {
			break
		}
	}

	st, body, _ := f.do("GET", "/api/v1/approvals?status=pending&limit=1", calc, nil)
	as, _ := body["approvals"].([]any)
	if st != 200 || len(as) != 1 || as[0].(map[string]any)["id"] != mine {
		t.Errorf("the calc user's approvals, limit 1: %d %v; want theirs (%s)", st, body, mine)
	}
	if st, body, _ := f.do("GET", "/api/v1/approvals?status=pending&limit=2", open, nil); st != 200 ||
		len(body["approvals"].([]any)) != 2 {
		t.Errorf("the user without a profile, limit 2: %d %v; want both", st, body)
	}
}
