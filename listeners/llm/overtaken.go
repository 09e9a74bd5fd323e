package llm

import (
	"math"
	"strings"
)

// A caller may send its next message while the agent is still answering
// the last one (a /ws or REST client continuing its conversation before the
// answer came). The pump records that message in the history at once and
// hands it to the agent, whose handling waits for the conversation's lock;
// the model's reply made meanwhile was made without it. Recorded after it,
// that reply would read as an answer to it (and end the request the next
// handling sends: a provider takes a trailing assistant message as the
// start of its own answer), and answering both messages would send two
// answers on a thread the first one already ended. So the reply is dropped,
// and the handling of the newer message asks the model again with both.

// overtaken reports whether a new message from the conversation's caller
// reached the session's history after the agent read it (st.seen slots):
// its handling is under way and will ask the model with everything.
func (a *Agent) overtaken(st *turnState) bool {
	if st.spread || st.caller == "" || st.seen < 0 {
		return false
	}
	tc, ok := a.History.Thread(st.session)
	if !ok {
		return false
	}
	for _, s := range tc.Slice(st.seen, math.MaxInt) {
		if s.To == a.Name && s.InReplyTo == "" && strings.EqualFold(s.From, st.caller) && !isErrorPayload(&s) {
			return true
		}
	}
	return false
}
