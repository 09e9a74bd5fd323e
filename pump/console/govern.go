package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/bus/client"
	"github.com/xml-pipeline/xmlpipe/pump/bus/wire"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// WatchGovernance implements Governor: the approval, halt and alert frames
// the bus pushes on the console's /ws socket.
func (r *Remote) WatchGovernance(fn func(line string)) (cancel func()) {
	r.govMu.Lock()
	defer r.govMu.Unlock()
	if r.govSubs == nil {
		r.govSubs = map[int]func(string){}
	}
	id := r.govNext
	r.govNext++
	r.govSubs[id] = fn
	return func() {
		r.govMu.Lock()
		delete(r.govSubs, id)
		r.govMu.Unlock()
	}
}

// governanceEvent turns a governance frame into a line for the watchers.
func (r *Remote) governanceEvent(typ string, data []byte) {
	var e organism.GovernanceEvent
	switch typ {
	case wire.TypeApproval, wire.TypeApprovalDecided:
		var f wire.Approval
		if json.Unmarshal(data, &f) != nil {
			return
		}
		a := f.Approval
		e.Kind = organism.EventApproval
		if typ == wire.TypeApprovalDecided {
			e.Kind = organism.EventApprovalDecided
		}
		e.Approval = &organism.Approval{ID: a.ID, Agent: a.Agent, Target: a.Target, RequestReason: a.RequestReason,
			Payload: a.Payload, Status: a.Status, DecidedBy: a.DecidedBy, Reason: a.Reason}
	case wire.TypeHalted, wire.TypeResumed:
		var f wire.Halt
		if json.Unmarshal(data, &f) != nil {
			return
		}
		e.Kind, e.Scope, e.Listener, e.By = organism.EventResumed, f.Scope, f.Listener, f.By
		if typ == wire.TypeHalted {
			e.Kind = organism.EventHalted
		}
	case wire.TypeGuardianAlert:
		var f wire.GuardianAlert
		if json.Unmarshal(data, &f) != nil {
			return
		}
		e.Kind = organism.EventGuardianAlert
		e.Alert = &organism.GuardianAlert{Sender: f.Sender, Count: f.Count,
			Window: time.Duration(f.WindowSeconds * float64(time.Second)), Rules: f.Rules}
	default:
		return
	}
	line := e.Line()
	r.govMu.Lock()
	fns := make([]func(string), 0, len(r.govSubs))
	for _, fn := range r.govSubs {
		fns = append(fns, fn)
	}
	r.govMu.Unlock()
	for _, fn := range fns {
		fn(line)
	}
}

// Approvals implements Governor over GET /api/v1/approvals.
func (r *Remote) Approvals(ctx context.Context, status string) ([]organism.Approval, error) {
	q := url.Values{}
	if status != "" {
		q.Set("status", status)
	}
	var out struct {
		Approvals []wire.ApprovalInfo `json:"approvals"`
	}
	if err := r.rest(ctx, http.MethodGet, "/api/v1/approvals?"+q.Encode(), nil, &out); err != nil {
		return nil, err
	}
	as := make([]organism.Approval, len(out.Approvals))
	for i, a := range out.Approvals {
		as[i] = remoteApproval(a)
	}
	return as, nil
}

func remoteApproval(a wire.ApprovalInfo) organism.Approval {
	created, _ := time.Parse(time.RFC3339Nano, a.CreatedAt)
	return organism.Approval{ID: a.ID, Kind: a.Kind, Conversation: a.ThreadID, Agent: a.Agent, Target: a.Target,
		Payload: a.Payload, RequestReason: a.RequestReason, Status: a.Status, DecidedBy: a.DecidedBy, Reason: a.Reason,
		CreatedAt: created}
}

// Decide implements Governor over POST /api/v1/approvals/{id}.
func (r *Remote) Decide(ctx context.Context, id string, approve bool, reason string) (organism.Approval, error) {
	decision := "deny"
	if approve {
		decision = "approve"
	}
	var a wire.ApprovalInfo
	err := r.rest(ctx, http.MethodPost, "/api/v1/approvals/"+url.PathEscape(id),
		map[string]string{"decision": decision, "reason": reason}, &a)
	if se, ok := errors.AsType[*client.StatusError](err); ok {
		switch se.Status {
		case http.StatusNotFound:
			return organism.Approval{}, fmt.Errorf("%w: %s", organism.ErrApprovalNotFound, id)
		case http.StatusConflict:
			// How it ended (who decided, why it expired) is in the
			// approval itself.
			var a wire.ApprovalInfo
			if r.rest(ctx, http.MethodGet, "/api/v1/approvals/"+url.PathEscape(id), nil, &a) == nil &&
				a.Status != organism.StatusPending {
				return organism.Approval{}, &organism.DecidedError{Approval: remoteApproval(a)}
			}
			return organism.Approval{}, fmt.Errorf("%w: %s", organism.ErrApprovalDecided, id)
		}
	}
	if err != nil {
		return organism.Approval{}, err
	}
	return remoteApproval(a), nil
}

// Halt implements Governor over POST /api/v1/organism/halt.
func (r *Remote) Halt(ctx context.Context, all bool) (string, error) {
	scope := "agents"
	if all {
		scope = "all"
	}
	var out struct {
		Scope string `json:"scope"`
	}
	err := r.rest(ctx, http.MethodPost, "/api/v1/organism/halt", map[string]string{"scope": scope}, &out)
	return out.Scope, err
}

// Resume implements Governor over POST /api/v1/organism/resume.
func (r *Remote) Resume(ctx context.Context) (bool, error) {
	var out struct {
		Resumed bool `json:"resumed"`
	}
	err := r.rest(ctx, http.MethodPost, "/api/v1/organism/resume", nil, &out)
	return out.Resumed, err
}

// HaltListener implements organism.ListenerHalter over POST
// /api/v1/organism/halt {"listener":NAME}.
func (r *Remote) HaltListener(ctx context.Context, name string) error {
	err := r.rest(ctx, http.MethodPost, "/api/v1/organism/halt", map[string]string{"listener": name}, nil)
	if se, ok := errors.AsType[*client.StatusError](err); ok && se.Status == http.StatusNotFound {
		return fmt.Errorf("%w: %s", pump.ErrUnknownListener, name)
	}
	return err
}

// ResumeListener implements organism.ListenerHalter over POST
// /api/v1/organism/resume {"listener":NAME}.
func (r *Remote) ResumeListener(ctx context.Context, name string) (bool, error) {
	var out struct {
		Resumed bool `json:"resumed"`
	}
	err := r.rest(ctx, http.MethodPost, "/api/v1/organism/resume", map[string]string{"listener": name}, &out)
	return out.Resumed, err
}

// rest runs one REST request as the logged-in user and decodes the JSON
// answer into out. A 403 wraps organism.ErrForbidden; other failures are a
// *client.StatusError carrying the server's error text.
func (r *Remote) rest(ctx context.Context, method, path string, body, out any) error {
	err := r.cl.Do(ctx, method, path, body, out)
	if se, ok := errors.AsType[*client.StatusError](err); ok && se.Status == http.StatusForbidden {
		return fmt.Errorf("%w (%s)", organism.ErrForbidden, r.Role)
	}
	return err
}

func (c *Console) governor() (organism.Governor, bool) {
	g, ok := c.b.(organism.Governor)
	if !ok {
		c.say("Approvals and the halt are not available over this connection.")
	}
	return g, ok
}

// cmdApprovals is /approvals [pending|approved|denied|expired|all].
func (c *Console) cmdApprovals(ctx context.Context, arg string) {
	g, ok := c.governor()
	if !ok {
		return
	}
	status := strings.ToLower(arg)
	switch status {
	case "":
		status = organism.StatusPending
	case "all":
		status = ""
	case organism.StatusPending, organism.StatusApproved, organism.StatusDenied, organism.StatusExpired:
	default:
		c.say("Usage: /approvals [pending|approved|denied|expired|all]")
		return
	}
	as, err := g.Approvals(ctx, status)
	if err != nil {
		c.say("Error: " + err.Error())
		return
	}
	if len(as) == 0 {
		if status == organism.StatusPending {
			c.say("No call waits for approval.")
		} else {
			c.say("No approvals.")
		}
		return
	}
	lines := []string{"Approvals:"}
	for _, a := range as {
		line := fmt.Sprintf("  %s  %-8s %s → %s  thread %s  %s", a.ID, a.Status, a.Agent, a.Target, short(a.Conversation),
			a.CreatedAt.Local().Format(time.TimeOnly))
		switch {
		case a.Status == organism.StatusPending && a.RequestReason != "":
			line += "  (" + a.RequestReason + ")"
		case a.Status != organism.StatusPending:
			who := a.DecidedBy
			if who == "" {
				who = "organism"
			}
			line += "  by " + who
			if a.Reason != "" {
				line += ": " + a.Reason
			}
		}
		lines = append(lines, line, "    "+clipLine(a.Call(), 400))
	}
	c.say(lines...)
}

// clipLine cuts s to n bytes (on a rune boundary) with "…".
func clipLine(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// cmdApprove is /approve ID [reason].
func (c *Console) cmdApprove(ctx context.Context, arg string) { c.decide(ctx, arg, true) }

// cmdDeny is /deny ID reason.
func (c *Console) cmdDeny(ctx context.Context, arg string) { c.decide(ctx, arg, false) }

func (c *Console) decide(ctx context.Context, arg string, approve bool) {
	g, ok := c.governor()
	if !ok {
		return
	}
	id, reason, _ := strings.Cut(arg, " ")
	if id == "" {
		if approve {
			c.say("Usage: /approve <id> [reason]")
		} else {
			c.say("Usage: /deny <id> <reason>")
		}
		return
	}
	a, err := g.Decide(ctx, id, approve, strings.TrimSpace(reason))
	switch {
	case errors.Is(err, organism.ErrApprovalNotFound):
		c.say("No approval " + id + ". /approvals lists the waiting calls.")
	case errors.Is(err, organism.ErrApprovalDecided):
		if de, ok := errors.AsType[*organism.DecidedError](err); ok {
			c.say("Approval" + strings.TrimPrefix(de.Error(), "approval") + ".") // how it ended
		} else {
			c.say("Approval " + id + " was decided already.")
		}
	case err != nil:
		c.say("Error: " + err.Error())
	default:
		c.say(fmt.Sprintf("Approval %s %s: %s → %s", a.ID, a.Status, a.Agent, a.Target))
	}
}

// cmdHalt is /halt [all]: the emergency stop.
func (c *Console) cmdHalt(ctx context.Context, arg string) {
	g, ok := c.governor()
	if !ok {
		return
	}
	all := strings.EqualFold(arg, "all")
	if arg != "" && !all {
		c.haltListener(ctx, arg)
		return
	}
	scope, err := g.Halt(ctx, all)
	if err != nil {
		c.say("Error: " + err.Error())
		return
	}
	c.say("Halted (" + scope + "): running calls cancelled, queued messages wait. /resume to go on.")
}

// haltListener is /halt NAME: the emergency stop of one listener.
func (c *Console) haltListener(ctx context.Context, name string) {
	h, ok := c.b.(organism.ListenerHalter)
	if !ok || strings.ContainsAny(name, " \t") {
		c.say("Usage: /halt [all|LISTENER]")
		return
	}
	switch err := h.HaltListener(ctx, name); {
	case errors.Is(err, pump.ErrUnknownListener):
		c.say("No listener named " + name + " (/listeners lists them)")
	case err != nil:
		c.say("Error: " + err.Error())
	default:
		c.say("Halted " + name + ": its running calls cancelled, its messages wait; the others serve on. /resume " +
			name + " to go on.")
	}
}

// cmdResume is /resume [LISTENER]: the halt (or that listener's) is lifted.
func (c *Console) cmdResume(ctx context.Context, arg string) {
	g, ok := c.governor()
	if !ok {
		return
	}
	if arg != "" {
		h, ok := c.b.(organism.ListenerHalter)
		if !ok {
			c.say("Usage: /resume")
			return
		}
		switch resumed, err := h.ResumeListener(ctx, arg); {
		case err != nil:
			c.say("Error: " + err.Error())
		case resumed:
			c.say("Resumed " + arg + ": what waited for it runs now.")
		default:
			c.say(arg + " was not halted on its own (/resume lifts the organism's halt).")
		}
		return
	}
	resumed, err := g.Resume(ctx)
	switch {
	case err != nil:
		c.say("Error: " + err.Error())
	case resumed:
		c.say("Resumed: what waited runs now.")
	default:
		c.say("The organism was not halted.")
	}
}

// Kill implements organism.Killer over POST /api/v1/threads/{id}/kill
// (admin).
func (r *Remote) Kill(ctx context.Context, thread string) (string, error) {
	var out struct {
		ThreadID string `json:"thread_id"`
	}
	err := r.rest(ctx, http.MethodPost, "/api/v1/threads/"+url.PathEscape(thread)+"/kill", nil, &out)
	se, ok := errors.AsType[*client.StatusError](err)
	switch {
	case ok && se.Status == http.StatusConflict: // completed, failed or killed already
		return thread, fmt.Errorf("%w: %s", organism.ErrConversationEnded, thread)
	case ok && se.Status == http.StatusNotFound:
		return "", fmt.Errorf("%w: %s", organism.ErrUnknownThread, thread)
	}
	return out.ThreadID, err
}
