package bus

import (
	"net/http"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// routes builds the server's handler: /health, /auth/login and /bus are open
// (a wrong method on the first two is a 405, as in the reference),
// everything else goes through the bearer-token middleware first (so an
// unknown path without a token is a 401, as in the reference).
func (s *Server) routes() http.Handler {
	open := http.NewServeMux()
	open.HandleFunc("GET /health", s.handleHealth)
	open.HandleFunc("POST /auth/login", s.handleLogin)
	open.HandleFunc("GET /bus", s.handleBusWS) // authenticates itself (bearer or legacy first frame)
	dash := dashboardHandler()
	open.Handle("GET /{$}", dash) // the dashboard page and its assets
	open.Handle("GET /ui/", dash)
	if s.opts.Metrics != nil {
		open.Handle("GET /metrics", s.metricsHandler()) // a scrape token, else an admin session
	}
	if s.opts.Federation != nil {
		open.Handle("GET /federation", s.opts.Federation) // authenticates itself (Ed25519 identities)
	}

	mux := http.NewServeMux()
	mux.HandleFunc("POST /auth/logout", s.handleLogout)
	mux.HandleFunc("GET /auth/me", s.handleMe)
	mux.HandleFunc("GET /ws", s.handleWS)

	const api = "/api/v1"
	read := func(pattern string, h http.HandlerFunc) { mux.HandleFunc(pattern, requireRole(auth.Viewer, h)) }
	read("GET "+api+"/organism", s.apiOrganism)
	read("GET "+api+"/organism/config", s.apiOrganismConfig)
	read("GET "+api+"/agents", s.apiAgents)
	read("GET "+api+"/gateways", s.apiGateways)
	read("GET "+api+"/agents/{name}", s.apiAgent)
	read("GET "+api+"/agents/{name}/config", s.apiAgentConfig)
	read("GET "+api+"/agents/{name}/schema", s.apiAgentSchema)
	read("GET "+api+"/threads", s.journaled(s.apiThreads))
	read("GET "+api+"/threads/{id}", s.journaled(s.apiThread))
	read("GET "+api+"/threads/{id}/messages", s.journaled(s.apiThreadMessages))
	read("GET "+api+"/threads/{id}/context", s.apiThreadContext)
	read("GET "+api+"/messages", s.journaled(s.apiMessages))
	read("GET "+api+"/usage/calls", s.apiUsageCalls)
	read("GET "+api+"/ws", s.handleStreamWS)
	read("GET "+api+"/ws/messages", s.handleMessagesWS)
	read("GET "+api+"/approvals", s.apiApprovals)
	read("GET "+api+"/approvals/{id}", s.apiApproval)
	mux.HandleFunc("POST "+api+"/approvals/{id}", requireRole(auth.Operator, s.apiDecide))
	read("GET "+api+"/memory", s.apiMemories)
	read("DELETE "+api+"/memory/{id}", s.apiForget) // the caller's own; an admin's any
	mux.HandleFunc("POST "+api+"/organism/halt", requireRole(auth.Admin, s.apiHalt))
	mux.HandleFunc("POST "+api+"/organism/resume", requireRole(auth.Admin, s.apiUnhalt))
	mux.HandleFunc("POST "+api+"/inject", requireRole(auth.Operator, s.apiInject))
	mux.HandleFunc("POST "+api+"/threads/{id}/kill", requireRole(auth.Operator, s.apiKill))     // an operator's own
	mux.HandleFunc("POST "+api+"/threads/{id}/cancel", requireRole(auth.Operator, s.apiCancel)) // an operator's own
	mux.HandleFunc("POST "+api+"/agents/{name}/pause", requireRole(auth.Admin, s.apiPause))
	mux.HandleFunc("POST "+api+"/agents/{name}/resume", requireRole(auth.Admin, s.apiResume))
	mux.HandleFunc("POST "+api+"/organism/reload", requireRole(auth.Admin, s.apiReload))
	mux.HandleFunc("POST "+api+"/organism/stop", requireRole(auth.Admin, s.apiStop))
	routed := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern == "" {
			w = &jsonErrorWriter{ResponseWriter: w} // the mux's own 404 and 405, as JSON
		}
		mux.ServeHTTP(w, r)
	})
	closed := s.requireAuth(routed)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.opts.Insecure {
			w.Header().Set("Strict-Transport-Security", "max-age=63072000")
		}
		if _, pattern := open.Handler(r); pattern != "" {
			open.ServeHTTP(w, r)
			return
		}
		if r.URL.Path == "/auth/login" || r.URL.Path == "/health" {
			// The reference's middleware lets these paths through whatever
			// the method: a wrong one is the router's 405, not a 401.
			open.ServeHTTP(&jsonErrorWriter{ResponseWriter: w}, r)
			return
		}
		closed.ServeHTTP(w, r)
	})
}

// jsonErrorWriter turns the mux's plain-text 404/405 answers into JSON error
// bodies (the Allow header of a 405 is kept).
type jsonErrorWriter struct {
	http.ResponseWriter
	wrote bool
}

// WriteHeader writes {"error": <status text>} with code.
func (j *jsonErrorWriter) WriteHeader(code int) {
	if j.wrote {
		return
	}
	j.wrote = true
	j.Header().Del("X-Content-Type-Options")
	writeError(j.ResponseWriter, code, http.StatusText(code))
}

// Write drops the mux's plain-text body.
func (j *jsonErrorWriter) Write(b []byte) (int, error) {
	if !j.wrote {
		j.WriteHeader(http.StatusOK)
	}
	return len(b), nil
}
