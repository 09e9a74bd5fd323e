package llm

import (
	"github.com/xml-pipeline/xmlpipe/registry"
)

// A conversation continued after its history was removed — expired
// (platform.context_buffer.ttl_hours without a message) or dropped to keep
// at most platform.context_buffer.max_threads histories — begins again
// with nothing. Unsaid, the model would answer as if it had never met the
// user, and the user would not know why. So every request of such a
// conversation carries a system note that its earlier history is gone and
// why (registry.Expiry.ModelNote), and the user is told once, at the first
// turn after it went, through the agent's interim text
// (registry.Expiry.UserNote): the console prints it as the agent's line, a
// /ws client gets it as an interim event, a Go caller through WithInterim.
// The context buffer keeps the notes across a restart of a durable
// organism.

// expiry reports whether the conversation on session follows an earlier
// history that was removed.
func (a *Agent) expiry(session string) (registry.Expiry, bool) {
	if a.History == nil {
		return registry.Expiry{}, false
	}
	return a.History.ExpiredEarlier(session)
}

// expiredNote is the system note of the requests of a conversation whose
// earlier history was removed ("" for any other).
func (a *Agent) expiredNote(st *turnState) string {
	x, ok := a.expiry(st.session)
	if !ok {
		return ""
	}
	return x.ModelNote()
}

// tellExpired tells the user that the conversation's earlier history was
// removed, at the turn of the first message of the history begun again.
func (a *Agent) tellExpired(st *turnState) {
	x, ok := a.expiry(st.session)
	if !ok || a.OnInterim == nil || a.historyLen(st.session) != 1 {
		return
	}
	a.logger().Info("conversation continued after its history was removed: the model and the user are told",
		"agent", a.Name, "thread", st.session, "reason", x.Reason, "last_active", x.LastActive, "ttl", x.TTL,
		"max_threads", x.MaxThreads)
	a.OnInterim(a.Name, st.md.ThreadID, x.UserNote(a.Name))
}
