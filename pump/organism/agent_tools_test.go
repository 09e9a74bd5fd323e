package organism

import (
	"strings"
	"testing"
)

// TestYAMLAgentCallsANativeTool: an XML-mode YAML agent that lists a native tool sees
// the tool's schema in its usage instructions, calls it with the tool's
// real element names, gets the result back in its conversation, and answers
// its caller with it; a call the tool refuses comes back as data the agent
// can correct.
func TestYAMLAgentCallsANativeTool(t *testing.T) {
	m := newScriptedModel(t, map[string][]string{
		"mathbot": {
			"Let me compute. <Calculate><Expression>2 ** 100000</Expression></Calculate>",
			"Too big; smaller then. <Calculate><Expression>6 * 7</Expression></Calculate>",
			"The answer is 42.",
		},
	})
	o := agentOrganism(t, m, `listeners:
  - name: mathbot
    agent: true
    description: Answers arithmetic questions
    prompt: You are mathbot.
    tool_calling: xml
    tools: [calculate]
    tool_config:
      calculate: {max_exponent: 100}
`)
	if got := ask(t, o, "mathbot", "what is six times seven?"); got != "The answer is 42." {
		t.Fatalf("reply %q", got)
	}
	reqs := m.requests("mathbot")
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3 (call, refused call corrected, answer)", len(reqs))
	}
	if usage := reqs[0].Messages[2]["content"]; !strings.Contains(usage, "calculate") || !strings.Contains(usage, "<Calculate>") ||
		!strings.Contains(usage, "<Expression>") {
		t.Errorf("usage instructions do not show the tool's schema:\n%s", usage)
	}
	last := func(r chatLog) string { return r.Messages[len(r.Messages)-1]["content"] }
	if refused := last(reqs[1]); !strings.Contains(refused, "[From calculate]") || !strings.Contains(refused, "exponent") {
		t.Errorf("the refused call did not come back to the agent as data: %q", refused)
	}
	if result := last(reqs[2]); !strings.Contains(result, "[From calculate]") || !strings.Contains(result, "42") {
		t.Errorf("the tool's result did not reach the agent: %q", result)
	}
}

// TestYAMLAgentCallsAnExternalMCPTool: an LLM agent reaches a tool of an
// external MCP server mounted by a type: mcp listener, with the tool's
// derived element names, and answers its caller with the result.
func TestYAMLAgentCallsAnExternalMCPTool(t *testing.T) {
	url := externalServer(t)
	m := newScriptedModel(t, map[string][]string{
		"adder": {"<ext.add><a>40</a><b>2</b></ext.add>", "The sum is 42."},
	})
	o := agentOrganism(t, m, `listeners:
  - name: ext
    type: mcp
    description: an external MCP server
    server: {url: `+url+`, timeout: 10s}
  - name: adder
    agent: true
    description: Adds numbers with an external tool
    prompt: You are adder.
    tool_calling: xml
    peers: [ext.add]
`)
	if got := ask(t, o, "adder", "add 40 and 2"); got != "The sum is 42." {
		t.Fatalf("reply %q", got)
	}
	reqs := m.requests("adder")
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	if usage := reqs[0].Messages[2]["content"]; !strings.Contains(usage, "<ext.add>") {
		t.Errorf("usage instructions do not show the mounted tool's schema:\n%s", usage)
	}
	if result := reqs[1].Messages[len(reqs[1].Messages)-1]["content"]; !strings.Contains(result, "[From ext.add]") ||
		!strings.Contains(result, "42") {
		t.Errorf("the external tool's result did not reach the agent: %q", result)
	}
}
