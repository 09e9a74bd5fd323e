package bus

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// apiOrganismBody is the Organism model.
type apiOrganismBody struct {
	Name          string  `json:"name"`
	Status        string  `json:"status"`
	UptimeSeconds float64 `json:"uptime_seconds"`
	AgentCount    int     `json:"agent_count"`
	ActiveThreads int     `json:"active_threads"`
	TotalMessages int64   `json:"total_messages"`
	Failed        int64   `json:"failed"`
	InFlight      int     `json:"in_flight"`
	// HandlerSecondsSum and HandlerCount total the handler timings the
	// metrics observed (sampled; absent without metrics): the mean latency
	// of an interval is the difference of the sums over that of the counts.
	HandlerSecondsSum *float64 `json:"handler_seconds_sum,omitempty"`
	HandlerCount      *int64   `json:"handler_count,omitempty"`
	// HaltedListeners are the listeners halted one by one (POST
	// /api/v1/organism/halt {"listener":…}), while the organism runs on
	// (absent: none; not shown to a user with a security profile).
	HaltedListeners []string `json:"halted_listeners,omitempty"`
	// Profile, set for a user with a security profile, is the profile
	// the answer is scoped to: agent_count and active_threads count only
	// what the profile sees; the organism-wide counters (total_messages,
	// failed, in_flight, the handler timings) are not shown (0, absent).
	Profile string `json:"profile,omitempty"`
	// Store is the durable store's health (absent without a store, and
	// for a user with a security profile).
	Store *apiStoreBody `json:"store,omitempty"`
}

// apiOrganism is GET /api/v1/organism.
func (s *Server) apiOrganism(w http.ResponseWriter, r *http.Request) {
	st := s.pump.Stats()
	sess := sessionOf(r.Context())
	status := "running"
	if _, halted := s.pump.Halted(); halted {
		status = statusHalted
	}
	// Active threads are those whose conversation runs, as a thread's
	// status says: not the threads of completed conversations kept for a
	// continuation (the registry's count, xmlpipe_threads_live).
	active, _ := s.threadCounts(sess)
	body := apiOrganismBody{Name: s.pump.Organism(), Status: status,
		UptimeSeconds: st.Uptime.Seconds(), AgentCount: s.visibleListeners(sess), ActiveThreads: active,
		TotalMessages: st.Processed, Failed: st.Failed, InFlight: st.InFlight}
	if sess.Profile != "" {
		body.TotalMessages, body.Failed, body.InFlight = 0, 0, 0
		body.Profile = sess.Profile
		writeJSON(w, http.StatusOK, body)
		return
	}
	body.HaltedListeners = s.pump.HaltedListeners()
	if s.opts.Store != nil {
		body.Store = storeBodyOf(s.opts.Store.Health())
	}
	if hl, ok := s.opts.Metrics.(HandlerLatencies); ok {
		sum, n := hl.HandlerLatency()
		secs := sum.Seconds()
		body.HandlerSecondsSum, body.HandlerCount = &secs, &n
	}
	writeJSON(w, http.StatusOK, body)
}

// apiOrganismConfig is GET /api/v1/organism/config: organism.yaml as loaded
// (defaults applied), with secrets redacted.
func (s *Server) apiOrganismConfig(w http.ResponseWriter, _ *http.Request) {
	s.writeSanitized(w, "sanitise config", s.opts.Organism.CurrentConfig())
}

// apiAgentBody is the Agent model.
type apiAgentBody struct {
	Name         string   `json:"name"`
	Description  string   `json:"description"`
	IsAgent      bool     `json:"is_agent"`
	Broadcast    bool     `json:"broadcast"`
	Peers        []string `json:"peers"`
	PayloadClass string   `json:"payload_class"`
	RootTag      string   `json:"root_tag"`
	State        string   `json:"state"`
	// CurrentThread is the thread a handler works on (the first of
	// several), null when none runs.
	CurrentThread *string `json:"current_thread"`
	// QueueDepth, Handled and LastActivity count the listener's work on
	// every thread: they are left out (absent, not zero) for a user with
	// a profile, who may not see all of it.
	QueueDepth *int   `json:"queue_depth,omitempty"`
	Active     int    `json:"active"`
	Handled    *int64 `json:"handled,omitempty"`
	// LastActivity is a time stamp, or null when the listener never
	// handled a message.
	LastActivity json.RawMessage `json:"last_activity,omitempty"`
	// LastError is the listener's most recent handler failure (null if
	// none), at LastErrorAt.
	LastError   *string `json:"last_error"`
	LastErrorAt *string `json:"last_error_at"`
}

// agentBody is the Agent model of li as sess may see it (listenerFor).
func (s *Server) agentBody(sess auth.Session, li pump.ListenerInfo, v agentView) apiAgentBody {
	li, v = s.listenerFor(sess, li), s.viewFor(sess, v)
	b := apiAgentBody{Name: li.Name, Description: li.Description, IsAgent: li.Agent, Broadcast: li.Broadcast,
		Peers: li.Peers, RootTag: li.RootTag, State: s.stateOf(li, v), CurrentThread: currentThread(li),
		Active: li.Active}
	if b.Peers == nil {
		b.Peers = []string{}
	}
	if lc, ok := s.listenerConfig(li.Name); ok {
		b.PayloadClass = lc.PayloadClass
	}
	if sess.Profile == "" {
		b.QueueDepth, b.Handled, b.LastActivity = &li.QueueDepth, &li.Handled, json.RawMessage("null")
		if !li.LastActivity.IsZero() {
			b.LastActivity, _ = json.Marshal(stamp(li.LastActivity))
		}
	}
	if !li.LastErrorTime.IsZero() {
		msg, ts := lastErrorFor(sess, li.LastError), stamp(li.LastErrorTime)
		b.LastError, b.LastErrorAt = &msg, &ts
	}
	return b
}

// listenerConfig is the configuration entry of a listener (the organism's
// own system listeners included).
func (s *Server) listenerConfig(name string) (config.Listener, bool) {
	if lc, ok := s.opts.Organism.CurrentConfig().Listener(name); ok {
		return lc, true
	}
	for _, lc := range organism.SystemListeners {
		if strings.EqualFold(lc.Name, name) {
			return lc, true
		}
	}
	return config.Listener{}, false
}

// listenerInfo finds a listener by name (case-insensitive, as routing).
func (s *Server) listenerInfo(name string) (pump.ListenerInfo, bool) {
	for _, li := range s.pump.Listeners() {
		if strings.EqualFold(li.Name, name) {
			return li, true
		}
	}
	return pump.ListenerInfo{}, false
}

// apiAgents is GET /api/v1/agents: every listener with its live state.
func (s *Server) apiAgents(w http.ResponseWriter, r *http.Request) {
	v := s.agentView()
	infos := s.pump.Listeners()
	sess := sessionOf(r.Context())
	out := make([]apiAgentBody, 0, len(infos))
	for _, li := range infos {
		if s.visible(sess, li.Name) {
			out = append(out, s.agentBody(sess, li, v))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"agents": out})
}

// apiAgent is GET /api/v1/agents/{name}.
func (s *Server) apiAgent(w http.ResponseWriter, r *http.Request) {
	li, ok := s.listenerInfo(r.PathValue("name"))
	sess := sessionOf(r.Context())
	if !ok || !s.visible(sess, li.Name) {
		writeError(w, http.StatusNotFound, "Agent not found")
		return
	}
	writeJSON(w, http.StatusOK, s.agentBody(sess, li, s.agentView()))
}

// apiAgentConfig is GET /api/v1/agents/{name}/config: the listener's
// configuration entry, secrets redacted.
func (s *Server) apiAgentConfig(w http.ResponseWriter, r *http.Request) {
	lc, ok := s.listenerConfig(r.PathValue("name"))
	if !ok || !s.visible(sessionOf(r.Context()), lc.Name) {
		writeError(w, http.StatusNotFound, "Agent not found")
		return
	}
	s.writeSanitized(w, "sanitise listener config", lc)
}

// apiAgentSchema is GET /api/v1/agents/{name}/schema: the XSD of the
// listener's payload.
func (s *Server) apiAgentSchema(w http.ResponseWriter, r *http.Request) {
	l, ok := s.pump.Lookup(r.PathValue("name"))
	if !ok || !s.visible(sessionOf(r.Context()), l.Name) {
		writeError(w, http.StatusNotFound, "Agent not found")
		return
	}
	w.Header().Set("Content-Type", "application/xml; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(l.Payload.XSD())
}
