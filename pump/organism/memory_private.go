package organism

import (
	"slices"
	"strings"

	"github.com/xml-pipeline/xmlpipe/listeners/llm"
	"github.com/xml-pipeline/xmlpipe/listeners/memory"
)

// MemoryListener is the organism's memory listener: remember sends what an
// agent asks to remember there, and its answers say what was stored.
const MemoryListener = memory.ListenerName

// CarriesMemory reports whether a message from from to to is memory
// traffic: what an agent asks to remember (a Remember message to the
// memory listener) or the memory listener's answer about it. Its payload
// is the conversation's user's (MemoryReadable).
func CarriesMemory(from, to string) bool {
	return strings.EqualFold(to, MemoryListener) || strings.EqualFold(from, MemoryListener)
}

// MemoryReadable reports whether user (an admin when admin) may read what
// an agent asked to remember in a conversation owner began: an admin
// always; anyone else only in a conversation of their own — none in the
// organism's own traffic, which no user began. Every surface that shows a
// memory request (its approval, its message, the history holding it)
// follows this rule; to anyone else it shows that the request happened,
// not what it holds.
func MemoryReadable(owner, user string, admin bool) bool {
	return admin || owner != "" && owner == user
}

// HistoryCarriesMemory reports whether a slot of an agent's context
// history — from from to to, of payload type payloadType, raw its
// content — holds memory text: memory traffic (CarriesMemory), an
// assistant message calling remember or recall, or such a call's result
// (what recall returns is the stored memories). A record of the agent
// loop that cannot be read is taken to hold it (withheld rather than shown).
func HistoryCarriesMemory(from, to, payloadType string, raw []byte) bool {
	if CarriesMemory(from, to) {
		return true
	}
	tools, ok, err := llm.HistoryTools(payloadType, raw)
	if !ok {
		return false
	}
	if err != nil {
		return true
	}
	return slices.ContainsFunc(tools, isMemoryTool)
}

// isMemoryTool reports whether name is one of the memory tools.
func isMemoryTool(name string) bool {
	return name == memory.RememberTool || name == memory.RecallTool
}
