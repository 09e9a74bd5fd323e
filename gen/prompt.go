package gen

import "strings"

// Peer is one peer listed in an agent's usage instructions.
type Peer struct {
	// Name is the peer listener's name.
	Name string
	// Description is the peer listener's description.
	Description string
	// Type is the peer's payload type; nil means the peer is not registered.
	Type *Type
}

// responseSemantics closes every usage-instructions text (python-reference §5.6).
const responseSemantics = `
---
## Important: Response Semantics

When you RESPOND (return to your caller), your call chain is pruned.
This means:
- Any sub-agents you called are effectively terminated
- Their state/context is lost (e.g., calculator memory, scratch space)
- You cannot call them again in the same context after responding

Therefore: Complete ALL sub-tasks before responding to your caller.
If you need results from a peer, wait for their response before you respond.`

// PromptSection returns the part of the usage instructions that describes one
// peer: its "## name" heading, description, schema and example, exactly as the
// reference lays it out, or "## name (not registered)" when p.Type is nil. The
// example uses the real element names (reference quirk Q19 fixed). The text
// has no leading or trailing newline.
func PromptSection(p Peer) string {
	if p.Type == nil {
		return "## " + p.Name + " (not registered)"
	}
	lines := []string{
		"## " + p.Name,
		"Description: " + p.Description,
		"Expected payload schema:",
		"```xml\n" + string(XSD(p.Type)) + "```",
		"Example structure:",
		"```xml\n" + string(Example(p.Type)) + "```",
	}
	return strings.Join(lines, "\n")
}

// UsageInstructions returns the tool-prompt text an agent receives about its
// peers, line for line the reference's usage_instructions (python-reference
// §5.6): who the agent is, one PromptSection per peer, then the response
// semantics block.
func UsageInstructions(agentName, agentDescription string, peers []Peer) string {
	lines := []string{
		"You are the " + agentName + " agent.",
		"Description: " + agentDescription,
		"",
		"You can send messages to the following peers:",
	}
	for _, p := range peers {
		lines = append(lines, "\n"+PromptSection(p))
	}
	lines = append(lines, responseSemantics)
	return strings.Join(lines, "\n")
}
