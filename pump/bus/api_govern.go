package bus

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/bus/wire"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// Events of the /api/v1/ws stream about governance.
const (
	streamApproval        = "approval"
	streamApprovalDecided = "approval_decided"
	streamGuardianAlert   = "guardian_alert"
	streamHalted          = "organism_halted"
	streamResumed         = "organism_resumed"
)

// approvalInfo is the wire form of an approval.
func approvalInfo(a organism.Approval) wire.ApprovalInfo {
	return wire.ApprovalInfo{ID: a.ID, Kind: a.Kind, ThreadID: a.Conversation, Thread: a.Thread, User: a.User, Agent: a.Agent,
		Target: a.Target, Payload: a.Payload, RequestReason: a.RequestReason, Rules: a.Rules, CreatedAt: stamp(a.CreatedAt),
		ExpiresAt: stamp(a.ExpiresAt), Status: a.Status, DecidedBy: a.DecidedBy, Reason: a.Reason,
		DecidedAt: stamp(a.DecidedAt)}
}

// Pages of GET /api/v1/approvals: each approval carries its held envelope
// (up to the organism's message cap, 1 MiB by default), so a page holds
// at most maxApprovalsLimit approvals (defaultApprovalsLimit unless
// ?limit= says) and stops before its envelopes pass maxApprovalsPageBytes
// (it always holds one). It is read from the store approvalsChunk at a
// time: what the server holds at once stays near the page's own size.
const (
	defaultApprovalsLimit = 100
	maxApprovalsLimit     = 500
	maxApprovalsPageBytes = 4 << 20
	approvalsChunk        = 16
)

// apiApprovals is GET /api/v1/approvals[?status=pending&thread=ID&limit=N&after=ID]:
// {"approvals":[Approval…],"next":ID} — the approvals the user may see,
// newest first, a page at a time: "next", present when more follow, is
// the ?after= of the next page.
func (s *Server) apiApprovals(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := organism.ApprovalFilter{Status: q.Get("status"), Thread: q.Get("thread")}
	switch f.Status {
	case "", organism.StatusPending, organism.StatusApproved, organism.StatusDenied, organism.StatusExpired:
	default:
		writeError(w, http.StatusBadRequest, "Unknown status: want pending, approved, denied or expired")
		return
	}
	limit := defaultApprovalsLimit
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxApprovalsLimit {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("limit must be a number from 1 to %d", maxApprovalsLimit))
			return
		}
		limit = n
	}
	sess := sessionOf(r.Context())
	gov := s.opts.Organism.Governance()
	if after := q.Get("after"); after != "" {
		// The cursor is an approval the user may see (another's is none).
		a, err := gov.Approval(r.Context(), after)
		if errors.Is(err, organism.ErrApprovalNotFound) || err == nil && !s.approvalVisible(sess, a) {
			writeError(w, http.StatusBadRequest, "Unknown after: want the id of an approval (a page's \"next\")")
			return
		}
		if err != nil {
			s.internalError(w, "read an approval", err)
			return
		}
		f.After = after
	}
	f.Viewer = &organism.ApprovalViewer{User: sess.Username, Admin: sess.Role.Allows(auth.Admin)}
	f.Limit = approvalsChunk
	out := make([]wire.ApprovalInfo, 0, min(limit, approvalsChunk))
	size, next := 0, ""
read:
	for {
		as, err := gov.Approvals(r.Context(), f)
		if err != nil {
			s.internalError(w, "list approvals", err)
			return
		}
		for _, a := range as {
			f.After = a.ID
			// A profile hides some (approvalVisible): the limit counts
			// what is left.
			if !s.approvalVisible(sess, a) {
				continue
			}
			if len(out) == limit || len(out) > 0 && size+len(a.Payload) > maxApprovalsPageBytes {
				next = out[len(out)-1].ID
				break read
			}
			out = append(out, approvalInfo(a))
			size += len(a.Payload)
		}
		if len(as) < approvalsChunk {
			break
		}
	}
	body := map[string]any{"approvals": out}
	if next != "" {
		body["next"] = next
	}
	writeJSON(w, http.StatusOK, body)
}

// apiApproval is GET /api/v1/approvals/{id}.
func (s *Server) apiApproval(w http.ResponseWriter, r *http.Request) {
	a, err := s.opts.Organism.Governance().Approval(r.Context(), r.PathValue("id"))
	if err == nil && !s.approvalVisible(sessionOf(r.Context()), a) {
		err = organism.ErrApprovalNotFound // outside the user's profile: it does not exist for them
	}
	switch {
	case errors.Is(err, organism.ErrApprovalNotFound):
		writeError(w, http.StatusNotFound, "Approval not found")
	case err != nil:
		s.internalError(w, "read an approval", err)
	default:
		writeJSON(w, http.StatusOK, approvalInfo(a))
	}
}

// decisionRequest is the body of POST /api/v1/approvals/{id}.
type decisionRequest struct {
	Decision string `json:"decision"`
	Reason   string `json:"reason"`
}

// maxDecisionReason caps the reason a human gives.
const maxDecisionReason = 2000

// apiDecide is POST /api/v1/approvals/{id} (operator):
// {"decision":"approve"|"deny","reason":…}. 409 when it was decided
// already.
func (s *Server) apiDecide(w http.ResponseWriter, r *http.Request) {
	var req decisionRequest
	if err := readJSON(r, &req); err != nil {
		writeReadError(w, err)
		return
	}
	var approve bool
	switch strings.ToLower(strings.TrimSpace(req.Decision)) {
	case "approve", "approved":
		approve = true
	case "deny", "denied":
	default:
		writeError(w, http.StatusBadRequest, `decision must be "approve" or "deny"`)
		return
	}
	if len(req.Reason) > maxDecisionReason {
		writeError(w, http.StatusBadRequest, "reason is too long (at most 2000 bytes)")
		return
	}
	sess := sessionOf(r.Context())
	// An approval the user may not see (another user's memory consent, one
	// outside their profile) does not exist for them.
	if a, err := s.opts.Organism.Governance().Approval(r.Context(), r.PathValue("id")); err == nil {
		if !s.approvalVisible(sess, a) {
			writeError(w, http.StatusNotFound, "Approval not found")
			return
		}
		if approve && a.Status == organism.StatusPending {
			why, err := s.ownReview(r.Context(), sess.Username, a)
			if err != nil {
				s.internalError(w, "list users", err)
				return
			}
			if why != "" {
				s.log.Warn("security event: a user approves their own reviewed message", "security", true,
					"user", sess.Username, "approval", a.ID)
				writeError(w, http.StatusForbidden, why)
				return
			}
		}
	}
	a, err := s.opts.Organism.Governance().Decide(r.Context(), r.PathValue("id"), approve, sess.Username, req.Reason)
	switch {
	case errors.Is(err, organism.ErrApprovalNotFound):
		writeError(w, http.StatusNotFound, "Approval not found")
	case errors.Is(err, organism.ErrApprovalDecided):
		msg := "Approval already decided"
		if de, ok := errors.AsType[*organism.DecidedError](err); ok {
			msg = "Approval" + strings.TrimPrefix(de.Error(), "approval") // how it ended: by whom, or why it expired
		}
		writeError(w, http.StatusConflict, msg)
	case err != nil:
		s.internalError(w, "decide an approval", err, "approval", r.PathValue("id"))
	default:
		s.log.Info("approval decided through the API", "user", sess.Username, "approval", a.ID, "status", a.Status)
		writeJSON(w, http.StatusOK, approvalInfo(a))
	}
}

// haltRequest is the optional body of POST /api/v1/organism/halt.
type haltRequest struct {
	// Scope is agents (the default: the LLM agents stop, tools and other
	// listeners keep serving) or all.
	Scope string `json:"scope"`
	// Listener, instead of a scope, halts that one listener alone.
	Listener string `json:"listener"`
}

// resumeRequest is the optional body of POST /api/v1/organism/resume.
type resumeRequest struct {
	// Listener lifts only that listener's halt ("": every halt).
	Listener string `json:"listener"`
}

// apiHalt is POST /api/v1/organism/halt (admin): the emergency stop.
func (s *Server) apiHalt(w http.ResponseWriter, r *http.Request) {
	var req haltRequest
	if r.ContentLength != 0 {
		if err := readJSON(r, &req); err != nil {
			writeReadError(w, err)
			return
		}
	}
	user := sessionOf(r.Context()).Username
	if name := strings.TrimSpace(req.Listener); name != "" {
		if req.Scope != "" {
			writeError(w, http.StatusBadRequest, `give "scope" or "listener", not both`)
			return
		}
		rep, err := s.opts.Organism.Governance().HaltListener(user, name)
		switch {
		case errors.Is(err, pump.ErrUnknownListener):
			writeError(w, http.StatusNotFound, "No listener named "+name)
		case errors.Is(err, pump.ErrClosed):
			writeError(w, http.StatusServiceUnavailable, "Organism shutting down")
		case err != nil:
			s.internalError(w, "halt", err)
		default:
			writeJSON(w, http.StatusOK, map[string]any{"status": statusHalted, "listener": rep.Listener,
				"cancelled": rep.Cancelled, "held": rep.Held})
		}
		return
	}
	scope := pump.HaltAgents
	switch strings.ToLower(strings.TrimSpace(req.Scope)) {
	case "", "agents":
	case "all":
		scope = pump.HaltAll
	default:
		writeError(w, http.StatusBadRequest, `scope must be "agents" or "all"`)
		return
	}
	rep, err := s.opts.Organism.Governance().Halt(user, scope)
	switch {
	case errors.Is(err, pump.ErrClosed):
		writeError(w, http.StatusServiceUnavailable, "Organism shutting down")
	case err != nil:
		s.internalError(w, "halt", err)
	default:
		writeJSON(w, http.StatusOK, map[string]any{"status": statusHalted, "scope": rep.Scope.String(),
			"cancelled": rep.Cancelled, "held": rep.Held})
	}
}

// apiUnhalt is POST /api/v1/organism/resume (admin): the halt is lifted.
// With {"listener":"NAME"} only that listener's halt is lifted.
func (s *Server) apiUnhalt(w http.ResponseWriter, r *http.Request) {
	var req resumeRequest
	if r.ContentLength != 0 {
		if err := readJSON(r, &req); err != nil {
			writeReadError(w, err)
			return
		}
	}
	user := sessionOf(r.Context()).Username
	if name := strings.TrimSpace(req.Listener); name != "" {
		resumed := s.opts.Organism.Governance().ResumeListener(user, name)
		writeJSON(w, http.StatusOK, map[string]any{"listener": name, "resumed": resumed})
		return
	}
	resumed := s.opts.Organism.Governance().Resume(user)
	writeJSON(w, http.StatusOK, map[string]any{"status": "running", "resumed": resumed})
}

// statusHalted is the organism's status while halted.
const statusHalted = "halted"

// onGovernance pushes a governance event: to the /ws sockets that may see
// its conversation (those routed to it, and admins'), and to the event
// streams. It runs on the organism's goroutines and never blocks.
func (s *Server) onGovernance(e organism.GovernanceEvent) {
	ts := stamp(e.Time)
	switch e.Kind {
	case organism.EventApproval, organism.EventApprovalDecided:
		a := approvalInfo(*e.Approval)
		if e.Kind == organism.EventApprovalDecided {
			s.turns.approvalDecided(*e.Approval)
		}
		typ, name := wire.TypeApproval, streamApproval
		if e.Kind == organism.EventApprovalDecided {
			typ, name = wire.TypeApprovalDecided, streamApprovalDecided
		}
		frame := wire.Approval{Head: wire.Head{Type: typ}, Approval: a}
		visible := func(sess auth.Session) bool { return s.approvalVisible(sess, *e.Approval) }
		s.wsocks.each(func(ws *wsSocket) {
			switch {
			case !ws.subs.wants(typ) || !e.Approval.VisibleTo(ws.c.sess.Username, ws.c.sess.Role.Allows(auth.Admin)):
			case s.router.routed(a.ThreadID, ws):
				ws.post(a.ThreadID, frame)
			case ws.c.sess.Role.Allows(auth.Admin) && visible(ws.c.sess):
				ws.c.send(frame)
			}
		})
		s.broadcast(streamEvent{name: name, threads: []string{a.ThreadID, a.Thread}, agents: []string{a.Agent, a.Target},
			profile: s.threadProfile(cmp.Or(a.Thread, a.ThreadID)), only: visible,
			body: map[string]any{"event": name, "approval": a, "timestamp": ts}})
	case organism.EventGuardianAlert:
		al := e.Alert
		frame := wire.GuardianAlert{Head: wire.Head{Type: wire.TypeGuardianAlert}, Sender: al.Sender, Count: al.Count,
			WindowSeconds: al.Window.Seconds(), Rules: al.Rules, Timestamp: ts}
		s.wsocks.each(func(ws *wsSocket) {
			if ws.c.sess.Role.Allows(auth.Admin) && ws.subs.wants(wire.TypeGuardianAlert) {
				ws.c.send(frame)
			}
		})
		s.broadcast(streamEvent{name: streamGuardianAlert, agents: []string{al.Sender}, wide: true, body: map[string]any{
			"event": streamGuardianAlert, "sender": al.Sender, "count": al.Count, "window_seconds": al.Window.Seconds(),
			"rules": al.Rules, "timestamp": ts}})
	case organism.EventHalted, organism.EventResumed:
		typ, name := wire.TypeHalted, streamHalted
		if e.Kind == organism.EventResumed {
			typ, name = wire.TypeResumed, streamResumed
		}
		frame := wire.Halt{Head: wire.Head{Type: typ}, Scope: e.Scope, Listener: e.Listener, By: e.By, Timestamp: ts}
		s.wsocks.each(func(ws *wsSocket) {
			if ws.subs.wants(typ) {
				ws.c.send(frame)
			}
		})
		body := map[string]any{"event": name, "scope": e.Scope, "by": e.By, "timestamp": ts}
		if e.Listener != "" {
			body["listener"] = e.Listener
		}
		s.broadcast(streamEvent{name: name, body: body})
	}
}
