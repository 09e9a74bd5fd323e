package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/bus/wire"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// Governance errors, shared by the backends.
var (
	// ErrApprovalNotFound: no approval has the id.
	ErrApprovalNotFound = errors.New("no such approval")
	// ErrApprovalDecided: the approval was decided already.
	ErrApprovalDecided = errors.New("approval already decided")
	// ErrForbidden: the user's role does not allow the command.
	ErrForbidden = errors.New("forbidden for this role")
)

// Approval is a call waiting for a human (or decided), as /approvals shows
// it.
type Approval struct {
	ID, Kind                  string
	Conversation              string
	Agent, Target             string
	Payload, RequestReason    string
	Status, DecidedBy, Reason string
	CreatedAt                 time.Time
}

// Governor is an optional Backend capability: the approvals (/approvals,
// /approve, /deny) and the emergency halt (/halt, /resume).
type Governor interface {
	// Approvals lists the approvals of status ("" for every one), newest
	// first.
	Approvals(ctx context.Context, status string) ([]Approval, error)
	// Decide approves or denies the approval id, with a reason.
	Decide(ctx context.Context, id string, approve bool, reason string) (Approval, error)
	// Halt stops the agents (all: every listener) and reports the scope.
	Halt(ctx context.Context, all bool) (scope string, err error)
	// Resume lifts a halt; false when none was in force.
	Resume(ctx context.Context) (bool, error)
	// WatchGovernance calls fn with a line for every governance event the
	// user may see (a call begins waiting, is decided; a halt; a guardian
	// alert) until cancel is called. fn must not block.
	WatchGovernance(fn func(line string)) (cancel func())
}

// localUser is who decides in the in-process console (the operator at the
// terminal).
const localUser = "console"

// Approvals implements Governor.
func (l *Local) Approvals(ctx context.Context, status string) ([]Approval, error) {
	as, err := l.org.Governance().Approvals(ctx, organism.ApprovalFilter{Status: status})
	if err != nil {
		return nil, err
	}
	out := make([]Approval, len(as))
	for i, a := range as {
		out[i] = localApproval(a)
	}
	return out, nil
}

func localApproval(a organism.Approval) Approval {
	return Approval{ID: a.ID, Kind: a.Kind, Conversation: a.Conversation, Agent: a.Agent, Target: a.Target,
		Payload: a.Payload, RequestReason: a.RequestReason, Status: a.Status, DecidedBy: a.DecidedBy, Reason: a.Reason,
		CreatedAt: a.CreatedAt}
}

// Decide implements Governor.
func (l *Local) Decide(ctx context.Context, id string, approve bool, reason string) (Approval, error) {
	a, err := l.org.Governance().Decide(ctx, id, approve, localUser, reason)
	switch {
	case errors.Is(err, organism.ErrApprovalNotFound):
		return Approval{}, fmt.Errorf("%w: %s", ErrApprovalNotFound, id)
	case errors.Is(err, organism.ErrApprovalDecided):
		return Approval{}, fmt.Errorf("%w: %s", ErrApprovalDecided, id)
	case err != nil:
		return Approval{}, err
	}
	return localApproval(a), nil
}

// Halt implements Governor.
func (l *Local) Halt(_ context.Context, all bool) (string, error) {
	scope := pump.HaltAgents
	if all {
		scope = pump.HaltAll
	}
	rep, err := l.org.Governance().Halt(localUser, scope)
	return rep.Scope.String(), err
}

// Resume implements Governor.
func (l *Local) Resume(context.Context) (bool, error) {
	return l.org.Governance().Resume(localUser), nil
}

// WatchGovernance implements Governor: the local console is the
// organism's operator and hears of every governance event.
func (l *Local) WatchGovernance(fn func(line string)) (cancel func()) {
	return l.org.Governance().Subscribe(func(e organism.GovernanceEvent) {
		switch e.Kind {
		case organism.EventApproval, organism.EventApprovalDecided:
			a := e.Approval
			fn(approvalLine(e.Kind, a.ID, a.Agent, a.Target, a.RequestReason, a.Status, a.DecidedBy, a.Reason))
		case organism.EventHalted:
			fn(haltLine(true, e.Scope, e.By))
		case organism.EventResumed:
			fn(haltLine(false, e.Scope, e.By))
		case organism.EventGuardianAlert:
			fn(alertLine(e.Alert.Sender, e.Alert.Count, e.Alert.Window.String(), e.Alert.Rules))
		}
	})
}

// approvalLine is the line a console prints when a call begins waiting or
// is decided.
func approvalLine(kind, id, agent, target, why, status, by, reason string) string {
	if kind != organism.EventApproval {
		s := fmt.Sprintf("[approval] %s %s: %s → %s", id, status, agent, target)
		if by != "" {
			s += " by " + by
		}
		if reason != "" {
			s += ": " + reason
		}
		return s
	}
	s := fmt.Sprintf("[approval] %s: %s → %s waits for a human", id, agent, target)
	if why != "" {
		s += " (" + why + ")"
	}
	return s + fmt.Sprintf(": /approve %s or /deny %s <reason>", id, id)
}

// haltLine is the line of a halt or resume.
func haltLine(halted bool, scope, by string) string {
	if halted {
		return fmt.Sprintf("[halt] the organism is halted (%s) by %s: /resume to go on", scope, by)
	}
	return "[halt] resumed by " + by
}

// alertLine is the line of a guardian alert.
func alertLine(sender string, count int, window string, rules []string) string {
	return fmt.Sprintf("[guardian] %s was refused %d times within %s (rules %s)", sender, count, window,
		strings.Join(rules, ", "))
}

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
	var line string
	switch typ {
	case wire.TypeApproval, wire.TypeApprovalDecided:
		var f wire.Approval
		if json.Unmarshal(data, &f) != nil {
			return
		}
		a := f.Approval
		kind := organism.EventApproval
		if typ == wire.TypeApprovalDecided {
			kind = organism.EventApprovalDecided
		}
		line = approvalLine(kind, a.ID, a.Agent, a.Target, a.RequestReason, a.Status, a.DecidedBy, a.Reason)
	case wire.TypeHalted, wire.TypeResumed:
		var f wire.Halt
		if json.Unmarshal(data, &f) != nil {
			return
		}
		line = haltLine(typ == wire.TypeHalted, f.Scope, f.By)
	case wire.TypeGuardianAlert:
		var f wire.GuardianAlert
		if json.Unmarshal(data, &f) != nil {
			return
		}
		line = alertLine(f.Sender, f.Count, (time.Duration(f.WindowSeconds * float64(time.Second))).String(), f.Rules)
	default:
		return
	}
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
func (r *Remote) Approvals(ctx context.Context, status string) ([]Approval, error) {
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
	as := make([]Approval, len(out.Approvals))
	for i, a := range out.Approvals {
		as[i] = remoteApproval(a)
	}
	return as, nil
}

func remoteApproval(a wire.ApprovalInfo) Approval {
	created, _ := time.Parse(time.RFC3339Nano, a.CreatedAt)
	return Approval{ID: a.ID, Kind: a.Kind, Conversation: a.ThreadID, Agent: a.Agent, Target: a.Target,
		Payload: a.Payload, RequestReason: a.RequestReason, Status: a.Status, DecidedBy: a.DecidedBy, Reason: a.Reason,
		CreatedAt: created}
}

// Decide implements Governor over POST /api/v1/approvals/{id}.
func (r *Remote) Decide(ctx context.Context, id string, approve bool, reason string) (Approval, error) {
	decision := "deny"
	if approve {
		decision = "approve"
	}
	var a wire.ApprovalInfo
	err := r.rest(ctx, http.MethodPost, "/api/v1/approvals/"+url.PathEscape(id),
		map[string]string{"decision": decision, "reason": reason}, &a)
	var se *statusError
	if errors.As(err, &se) {
		switch se.status {
		case http.StatusNotFound:
			return Approval{}, fmt.Errorf("%w: %s", ErrApprovalNotFound, id)
		case http.StatusConflict:
			return Approval{}, fmt.Errorf("%w: %s", ErrApprovalDecided, id)
		}
	}
	if err != nil {
		return Approval{}, err
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

// statusError is a REST answer other than 2xx.
type statusError struct {
	status int
	msg    string
}

func (e *statusError) Error() string { return e.msg }

// rest runs one REST request as the logged-in user and decodes the JSON
// answer into out. A 403 wraps ErrForbidden; other failures are a
// *statusError carrying the server's error text.
func (r *Remote) rest(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.base.String()+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+r.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		return fmt.Errorf("console: %s %s: %w", method, strings.SplitN(path, "?", 2)[0], err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(data, &e)
		if e.Error == "" {
			e.Error = resp.Status
		}
		if resp.StatusCode == http.StatusForbidden {
			return fmt.Errorf("%w (%s)", ErrForbidden, r.Role)
		}
		return &statusError{status: resp.StatusCode, msg: e.Error}
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}

func (c *Console) governor() (Governor, bool) {
	g, ok := c.b.(Governor)
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
		lines = append(lines, line, "    "+clipLine(a.Payload, 160))
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
	case errors.Is(err, ErrApprovalNotFound):
		c.say("No approval " + id + ". /approvals lists the waiting calls.")
	case errors.Is(err, ErrApprovalDecided):
		c.say("Approval " + id + " was decided already.")
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
		c.say("Usage: /halt [all]")
		return
	}
	scope, err := g.Halt(ctx, all)
	if err != nil {
		c.say("Error: " + err.Error())
		return
	}
	c.say("Halted (" + scope + "): running calls cancelled, queued messages wait. /resume to go on.")
}

// cmdResume is /resume: the halt is lifted.
func (c *Console) cmdResume(ctx context.Context, _ string) {
	g, ok := c.governor()
	if !ok {
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
