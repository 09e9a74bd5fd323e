package bus

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/bus/wire"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// maxMemoryQuery caps the words of a memory search.
const maxMemoryQuery = 500

// memoryInfo is the wire form of a memory.
func memoryInfo(m organism.Memory) wire.MemoryInfo {
	return wire.MemoryInfo{ID: m.ID, User: m.User, Agent: m.Agent, Content: m.Content, Tags: m.Tags, Consent: m.Consent,
		ThreadID: m.Conversation, Thread: m.Thread, CreatedAt: stamp(m.CreatedAt)}
}

// apiMemories is GET /api/v1/memory[?q=words&limit=N]: the caller's own
// memories, newest first (best first with q). An admin may ask for
// another user's (?user=NAME) or everyone's (?all=true).
func (s *Server) apiMemories(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	sess := sessionOf(r.Context())
	f := organism.MemoryFilter{User: sess.Username, Query: q.Get("q")}
	if len(f.Query) > maxMemoryQuery {
		writeError(w, http.StatusBadRequest, "q is too long (at most 500 bytes)")
		return
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > organism.DefaultMemoryLimit {
			writeError(w, http.StatusBadRequest, "limit must be a number from 1 to 500")
			return
		}
		f.Limit = n
	}
	user, hasUser := q["user"]
	all := strings.EqualFold(q.Get("all"), "true") || q.Get("all") == "1"
	if (hasUser || all) && !sess.Role.Allows(auth.Admin) {
		writeError(w, http.StatusForbidden, "Only an admin may list other users' memories")
		return
	}
	switch {
	case all:
		f.AllUsers = true
	case hasUser:
		f.User = user[0]
	}
	ms, err := s.opts.Organism.Memories(r.Context(), f)
	if err != nil {
		s.internalError(w, "list memories", err)
		return
	}
	out := make([]wire.MemoryInfo, len(ms))
	for i, m := range ms {
		out[i] = memoryInfo(m)
	}
	writeJSON(w, http.StatusOK, map[string]any{"memories": out})
}

// apiForget is DELETE /api/v1/memory/{id}: the caller's own memory is
// deleted (an admin may delete anyone's); another user's is a 404, as an
// unknown one.
func (s *Server) apiForget(w http.ResponseWriter, r *http.Request) {
	sess := sessionOf(r.Context())
	m, err := s.opts.Organism.ForgetMemory(r.Context(), r.PathValue("id"), sess.Username, sess.Role.Allows(auth.Admin),
		sourceAPI+":"+sess.Username)
	switch {
	case errors.Is(err, organism.ErrMemoryNotFound):
		writeError(w, http.StatusNotFound, "Memory not found")
	case err != nil:
		s.internalError(w, "delete a memory", err, "memory", r.PathValue("id"))
	default:
		s.log.Info("memory deleted through the API", "user", sess.Username, "memory", m.ID, "owner", m.User)
		writeJSON(w, http.StatusOK, map[string]any{"deleted": memoryInfo(m)})
	}
}
