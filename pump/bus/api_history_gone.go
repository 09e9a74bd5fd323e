package bus

import (
	"time"

	"github.com/xml-pipeline/xmlpipe/registry"
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
// agent remembers nothing before that message). A conversation whose
// history was removed again after it began again has each removal noted:
// "earlier" lists those before the latest, oldest first, each with the
// since_seq of the message that began the history after it — those the
// poller has not read past (its ?after= cursor below that seq).

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
	// Earlier are the removals before this one the poller has not read
	// past, oldest first (only on the latest).
	Earlier []apiHistoryGone `json:"earlier,omitempty"`
}

// historyGoneOf is the history_gone of thread id (nil when its agent's
// history, live or not begun again, follows none that was removed) for a
// poller whose cursor is after (a journal seq; 0: none).
func (s *Server) historyGoneOf(st *store.Store, id string, after int64) *apiHistoryGone {
	cb := s.pump.Context()
	if cb == nil {
		return nil
	}
	x, ok := cb.ExpiredEarlier(id)
	if !ok {
		return nil
	}
	g := goneNote(x)
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
	for _, e := range x.Earlier {
		if e.Since > after {
			n := goneNote(e)
			n.SinceSeq, n.Notice = e.Since, e.UserNote(agent)
			g.Earlier = append(g.Earlier, *n)
		}
	}
	return g
}

// goneNote is x as history_gone reports it, without notice and since_seq.
func goneNote(x registry.Expiry) *apiHistoryGone {
	return &apiHistoryGone{Reason: string(x.Reason), LastActive: x.LastActive.UTC().Format(time.RFC3339Nano),
		Removed: x.Removed.UTC().Format(time.RFC3339Nano)}
}
