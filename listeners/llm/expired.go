package llm

import (
	"fmt"
	"time"

	"github.com/xml-pipeline/xmlpipe/registry"
)

// A conversation continued after its history expired
// (platform.context_buffer.ttl_hours without a message: the context buffer
// removed it) begins again with nothing. Unsaid, the model would answer as
// if it had never met the user, and the user would not know why. So every
// request of such a conversation carries a system note that its earlier
// history expired (expiredModelNote), and the user is told once, at the
// first turn after the expiry, through the agent's interim text
// (expiredUserNote): the console prints it as the agent's line, a /ws
// client gets it as an interim event, a Go caller through WithInterim.

// expiredModelNote is the system note of a request whose conversation's
// earlier history expired: %s is the idle time after which it did.
const expiredModelNote = "The earlier history of this conversation expired (no message for %s) and was " +
	"removed: you do not see it and cannot recall it. If the user refers to it, say that it is gone and " +
	"ask for what you need."

// expiredUserNote is what the user is told at the first turn after the
// expiry: %s is the idle time.
const expiredUserNote = "[the earlier history of this conversation expired (no message for %s, " +
	"platform.context_buffer.ttl_hours): %s does not remember it]"

// expiry reports whether the conversation on session follows an earlier
// history that expired.
func (a *Agent) expiry(session string) (registry.Expiry, bool) {
	if a.History == nil {
		return registry.Expiry{}, false
	}
	return a.History.ExpiredEarlier(session)
}

// expiredNote is the system note of the requests of a conversation whose
// earlier history expired ("" for any other).
func (a *Agent) expiredNote(st *turnState) string {
	x, ok := a.expiry(st.session)
	if !ok {
		return ""
	}
	return fmt.Sprintf(expiredModelNote, idleText(x.TTL))
}

// tellExpired tells the user that the conversation's earlier history
// expired, at the turn of the first message of the history begun again.
func (a *Agent) tellExpired(st *turnState) {
	x, ok := a.expiry(st.session)
	if !ok || a.OnInterim == nil || a.historyLen(st.session) != 1 {
		return
	}
	a.logger().Info("conversation continued after its history expired: the model and the user are told",
		"agent", a.Name, "thread", st.session, "last_active", x.LastActive, "ttl", x.TTL)
	a.OnInterim(a.Name, st.md.ThreadID, fmt.Sprintf(expiredUserNote, idleText(x.TTL), a.Name))
}

// idleText words a TTL: whole hours as "24h", anything else as Go does.
func idleText(d time.Duration) string {
	if d >= time.Hour && d%time.Hour == 0 {
		return fmt.Sprintf("%dh", d/time.Hour)
	}
	return d.String()
}
