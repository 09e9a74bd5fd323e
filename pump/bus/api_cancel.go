package bus

import (
	"cmp"
	"errors"
	"net/http"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// statusCancelled is the status of a conversation whose answer in flight
// POST /api/v1/threads/{id}/cancel stopped: it goes on, its owner may
// continue it.
const statusCancelled = "cancelled"

// apiCancel is POST /api/v1/threads/{id}/cancel: the answer in flight of
// the conversation the thread belongs to stops, and the conversation goes
// on (pump.Pump.Cancel) — its owner's next message on it is accepted. The
// ownership rules are a kill's: an admin may cancel any; an operator only
// their own — another's is 404, as if it did not exist. A conversation with
// nothing in flight (completed, failed or killed) is 409 and nothing of it
// changes; a thread the organism does not know is 404.
func (s *Server) apiCancel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	sess := sessionOf(r.Context())
	if !sess.Role.Allows(auth.Admin) && !s.ownsConversation(sess, id) {
		writeError(w, http.StatusNotFound, "Thread not found")
		return
	}
	prof := s.threadProfile(id) // for the event streams: known only while the thread lives
	conv, err := s.pump.Cancel(id)
	switch {
	case errors.Is(err, pump.ErrConversationEnded) || errors.Is(err, pump.ErrUnknownThread) && s.journalKnows(id):
		writeJSON(w, http.StatusConflict, killConflict{Error: "Conversation is not answering: nothing to cancel",
			ThreadID: cmp.Or(conv, id)})
		return
	case errors.Is(err, pump.ErrUnknownThread):
		writeError(w, http.StatusNotFound, "Thread not found")
		return
	case err != nil:
		s.internalError(w, "cancel", err, "thread", id)
		return
	}
	s.log.Info("answer cancelled through the API", "user", sess.Username, "thread", conv)
	s.broadcast(streamEvent{name: streamThreadUpdated, threads: []string{conv, id}, profile: prof, body: map[string]any{
		"event": streamThreadUpdated, "thread_id": conv, "status": statusCancelled}})
	writeJSON(w, http.StatusOK, map[string]string{"thread_id": conv, "status": statusCancelled})
}
