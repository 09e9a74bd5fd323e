package llm

import "regexp"

// anthropicIDPattern is the pattern Anthropic holds tool_use ids (and the
// tool_use_id of their results) to: another id is refused with "String
// should match pattern '^[a-zA-Z0-9_-]+$'".
var anthropicIDPattern = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// anthropicCallID returns the id a call (and its result) carries on the
// Messages wire: the id itself when Anthropic takes it, else a stable
// stand-in of "toolu_" and 32 hex digits of its SHA-256. Ids with other
// characters come from OpenAI-compatible servers (Moonshot's
// "functions.get_weather:0", say) and stay in a conversation whose agent
// moved to Anthropic. The same id always maps to the same stand-in, so a
// call and its result stay bound; the history keeps the original.
func anthropicCallID(id string) string {
	if id == "" || anthropicIDPattern.MatchString(id) {
		return id
	}
	return standInCallID("toolu_", id)
}
