package bus

import (
	"cmp"
	"errors"
	"net/http"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// apiKill is POST /api/v1/threads/{id}/kill: the conversation the thread
// belongs to is stopped. An admin may kill any; an operator only their own
// (begun by one of their sessions) — another's is 404, as if it did not
// exist. A conversation that is no longer running — completed, failed or
// killed already — is 409 with its state, and nothing of it changes (a
// completed one may still be continued, a killed one never); a thread the
// organism does not know is 404.
func (s *Server) apiKill(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	sess := sessionOf(r.Context())
	if !sess.Role.Allows(auth.Admin) && !s.ownsConversation(sess, id) {
		writeError(w, http.StatusNotFound, "Thread not found")
		return
	}
	prof := s.killedProfile(id) // for the event streams: known only while the conversation lives
	conv, err := s.pump.Kill(id)
	switch {
	case (errors.Is(err, pump.ErrConversationEnded) || errors.Is(err, pump.ErrUnknownThread)) && s.wasKilled(id, conv):
		writeJSON(w, http.StatusConflict, killConflict{Error: "Conversation already killed", ThreadID: cmp.Or(conv, id)})
		return
	case errors.Is(err, pump.ErrConversationEnded) || errors.Is(err, pump.ErrUnknownThread) && s.journalKnows(id):
		writeJSON(w, http.StatusConflict, killConflict{Error: "Conversation already completed", ThreadID: cmp.Or(conv, id)})
		return
	case errors.Is(err, pump.ErrUnknownThread):
		writeError(w, http.StatusNotFound, "Thread not found")
		return
	case err != nil:
		s.internalError(w, "kill", err, "thread", id)
		return
	}
	s.killed.add(conv, id)
	s.log.Warn("conversation killed through the API", "user", sess.Username, "thread", conv)
	s.broadcast(streamEvent{name: streamThreadUpdated, threads: []string{conv, id}, profile: prof, body: map[string]any{
		"event": streamThreadUpdated, "thread_id": conv, "status": statusKilled}})
	writeJSON(w, http.StatusOK, map[string]string{"thread_id": conv, "status": statusKilled})
}

// killedProfile is the profile of the conversation a kill naming thread
// id stops, for the event streams: id's own while it lives, else (an inner
// thread of the conversation that ended) its conversation root's, which
// Kill resolves it to. "" for none, or a conversation no longer live.
func (s *Server) killedProfile(id string) string {
	if prof, live := s.pump.Threads().Profile(id); live {
		return prof
	}
	if root, ok := s.pump.Threads().EndedRoot(id); ok && root != id {
		return s.threadProfile(root)
	}
	return ""
}

// killConflict is the 409 body of a kill of a conversation that no longer
// runs: why, and the conversation's id.
type killConflict struct {
	Error    string `json:"error"`
	ThreadID string `json:"thread_id"`
}

// journalKnows reports whether the journal holds an entry of thread id,
// pruned ones included (a conversation that ran and ended, as GET
// /api/v1/threads/{id} finds it); false without a journal or when it
// cannot be read.
func (s *Server) journalKnows(id string) bool {
	st := s.opts.Store
	if st == nil {
		return false
	}
	entries, err := st.Thread(id)
	if err != nil {
		s.log.Warn("kill: journal thread", "thread", id, "error", err)
		return false
	}
	var conv string
	return len(entries) > 0 || s.prunedThread(st, id, &conv)
}

// apiPause is POST /api/v1/agents/{name}/pause (admin).
func (s *Server) apiPause(w http.ResponseWriter, r *http.Request) {
	s.setPaused(w, r, true)
}

// apiResume is POST /api/v1/agents/{name}/resume (admin).
func (s *Server) apiResume(w http.ResponseWriter, r *http.Request) {
	s.setPaused(w, r, false)
}

func (s *Server) setPaused(w http.ResponseWriter, r *http.Request, paused bool) {
	name := r.PathValue("name")
	li, ok := s.listenerInfo(name)
	sess := sessionOf(r.Context())
	if !ok || !s.visible(sess, li.Name) {
		writeError(w, http.StatusNotFound, "Agent not found")
		return
	}
	op, verb := s.pump.Resume, "resumed"
	if paused {
		op, verb = s.pump.Pause, "paused"
	}
	if err := op(li.Name); err != nil {
		if errors.Is(err, pump.ErrUnknownListener) {
			writeError(w, http.StatusNotFound, "Agent not found")
			return
		}
		s.internalError(w, "pause/resume", err, "agent", li.Name)
		return
	}
	s.log.Info("agent "+verb+" through the API", "user", sess.Username, "agent", li.Name)
	li, _ = s.listenerInfo(li.Name)
	writeJSON(w, http.StatusOK, s.agentBody(sess, li, s.agentView()))
}

// apiReload is POST /api/v1/organism/reload (admin): 200 once the new
// configuration is in force, 422 with the reason when it is refused.
func (s *Server) apiReload(w http.ResponseWriter, r *http.Request) {
	s.control(w, r, "reload", "reloaded")
}

// apiStop is POST /api/v1/organism/stop (admin).
func (s *Server) apiStop(w http.ResponseWriter, r *http.Request) {
	s.control(w, r, "stop", "stopping")
}

// control asks the Controller to stop (202 once it started) or reload (200
// once done, 422 when refused); 501 without a Controller or when it does
// not support the operation.
func (s *Server) control(w http.ResponseWriter, r *http.Request, what, status string) {
	c := s.opts.Controller
	if c == nil {
		writeError(w, http.StatusNotImplemented, "Not supported by this server: "+what)
		return
	}
	op := c.Stop
	if what == "reload" {
		op = c.Reload
	}
	if err := op(r.Context()); err != nil {
		switch {
		case errors.Is(err, ErrNotSupported):
			writeError(w, http.StatusNotImplemented, "Not supported by this server: "+what)
		case errors.Is(err, organism.ErrReloadRefused):
			s.log.Warn("organism "+what+" through the API refused", "user", sessionOf(r.Context()).Username, "error", err)
			writeError(w, http.StatusUnprocessableEntity, err.Error())
		default:
			s.log.Error("organism "+what, "error", err)
			writeError(w, http.StatusInternalServerError, err.Error())
		}
		return
	}
	s.log.Warn("organism "+what+" requested through the API", "user", sessionOf(r.Context()).Username)
	code := http.StatusAccepted
	if what == "reload" {
		code = http.StatusOK
	}
	writeJSON(w, code, map[string]string{"status": status})
}

// ownsConversation reports whether the conversation thread belongs to was
// begun by one of sess's user's sessions (REST, console or /ws) — the rule
// by which they may continue it.
func (s *Server) ownsConversation(sess auth.Session, thread string) bool {
	conv := s.conversationOf(thread)
	who := pump.Principal{From: sourceAPI + ":" + sess.Username, User: sess.Username, Profile: sess.Profile}
	// An id never used passes (it is nobody's), and Kill answers 404.
	return s.pump.CheckThread(who, conv) == nil
}
