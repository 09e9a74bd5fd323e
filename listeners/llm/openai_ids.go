package llm

import (
	"crypto/sha256"
	"encoding/hex"
)

// maxOpenAICallID is the longest tool call id OpenAI takes: a longer one in
// a request's history (tool_calls[].id, tool_call_id) is refused with
// "string too long. Expected a string with maximum length 40".
const maxOpenAICallID = 40

// openAICallID returns the id a call (and its result) carries on the Chat
// Completions wire: the id itself when OpenAI takes it, else a stable
// stand-in of "call_" and 32 hex digits of its SHA-256 (37 characters).
// Ids that long come from other servers — vLLM's "chatcmpl-tool-" and 32
// hex digits, any compatible server's (the agent keeps ids of up to
// stage.MaxRefBytes) — and stay in a conversation whose agent moved to
// OpenAI. The same id always maps to the same stand-in, so a call and its
// result stay bound; the history keeps the original.
func openAICallID(id string) string {
	if len(id) <= maxOpenAICallID {
		return id
	}
	return standInCallID("call_", id)
}

// standInCallID is the stand-in a provider's wire carries for a call id it
// refuses: prefix and 32 hex digits of the id's SHA-256, the same for the
// same id, so that a call and its result stay bound.
func standInCallID(prefix, id string) string {
	sum := sha256.Sum256([]byte(id))
	return prefix + hex.EncodeToString(sum[:16])
}
