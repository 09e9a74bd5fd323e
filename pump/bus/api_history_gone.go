package bus

import (
	"time"

	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// A conversation continued after its agent's history was removed (idle for
// platform.context_buffer.ttl_hours, or dropped to keep max_threads) is
// told so once, as the agent's interim text (console, /ws) and as the
// inject's "notice". A client that only polls
// GET /api/v1/threads/{id}/messages saw neither: interim text is not
// journaled. The note is not journaled either — it is the state of the
// agent's memory, not a message — so the messages answer carries it as
// "history_gone" for as long as the buffer keeps it: pending until the
// conversation goes on, then with the history begun again (since_seq: the
// agent remembers nothing before that message).

// apiHistoryGone is the "history_gone" of a thread's messages.
type apiHistoryGone struct {
	// Reason is "ttl" (idle for ttl_hours) or "evicted" (dropped to keep
	// max_threads).
	Reason string `json:"reason"`
	// Notice is what the user was (or will be) told, as the console and
	// the inject's "notice" say it.
	Notice string `json:"notice"`
	// LastActive is when the removed history was last appended to,
	// Removed when it was removed (RFC 3339).
	LastActive string `json:"last_active"`
	Removed    string `json:"removed"`
	// SinceSeq is the journal seq of the message that began the history
	// again: the agent remembers nothing journaled before it. Absent while
	// the note waits for the conversation to go on.
	SinceSeq int64 `json:"since_seq,omitempty"`
}

// historyGoneOf is the history_gone of thread id (nil when its agent's
// history, live or not begun again, follows none that was removed).
func (s *Server) historyGoneOf(st *store.Store, id string) *apiHistoryGone {
	cb := s.pump.Context()
	if cb == nil {
		return nil
	}
	x, ok := cb.ExpiredEarlier(id)
	if !ok {
		return nil
	}
	g := &apiHistoryGone{Reason: string(x.Reason), LastActive: x.LastActive.UTC().Format(time.RFC3339Nano),
		Removed: x.Removed.UTC().Format(time.RFC3339Nano)}
	agent := ""
	if c, live := cb.Thread(id); live {
		if first, ok := c.At(0); ok {
			g.SinceSeq, agent = first.Seq, first.To
		}
	}
	if agent == "" {
		// Not begun again: the agent is the addressee of the thread's
		// first message.
		if es, err := st.ThreadAfter(id, 0, 1); err == nil && len(es) > 0 {
			agent = es[0].To
			if agent == "" {
				agent = es[0].Listener
			}
		}
	}
	if agent == "" {
		agent = "the agent"
	}
	g.Notice = x.UserNote(agent)
	return g
}
