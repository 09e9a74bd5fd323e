package organism

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/llm"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/guardian"
	"github.com/xml-pipeline/xmlpipe/registry/store"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// GovernanceObserver is told of every governance decision: rule is the
// constitution rule's id ("" for a call its sender's approval list holds),
// decision one of deny, review, hold, approved, denied, expired.
// observe.Metrics counts them.
type GovernanceObserver interface {
	GovernanceDecision(rule, decision string)
}

// The kinds of GovernanceEvent.
const (
	// EventApproval: something began waiting for a human (Approval).
	EventApproval = "approval"
	// EventApprovalDecided: an approval was approved, denied or expired
	// (Approval).
	EventApprovalDecided = "approval-decided"
	// EventGuardianAlert: one sender's messages were refused repeatedly
	// (Alert).
	EventGuardianAlert = "guardian-alert"
	// EventHalted and EventResumed: the emergency halt began or ended
	// (Scope, By).
	EventHalted  = "halted"
	EventResumed = "resumed"
)

// GovernanceEvent is something operators are told about.
type GovernanceEvent struct {
	Kind string
	Time time.Time
	// Approval is set for EventApproval and EventApprovalDecided.
	Approval *Approval
	// Alert is set for EventGuardianAlert.
	Alert *GuardianAlert
	// Scope and By describe a halt or resume ("agents", "all", or
	// "listener" for one listener's; who).
	Scope, By string
	// Listener names the listener of a halt or resume of scope "listener".
	Listener string
}

// GuardianAlert reports repeated violations by one sender.
type GuardianAlert struct {
	// Sender is who sent the refused messages; Count how many within
	// Window; Rules the ids they violated, most recent last.
	Sender string
	Count  int
	Window time.Duration
	Rules  []string
}

// Governance is the organism's governance: the guardian applying the
// constitution documents' rules, the approvals humans decide, and the
// emergency halt. It is the pump's delivery gate (pump.DeliveryGate).
type Governance struct {
	pump  *pump.Pump
	guard *guardian.Guardian
	book  *approvalBook
	// ids makes the approvals' ids (approval_key.go).
	ids   *approvalIDs
	log   *slog.Logger
	clock func() time.Time
	obs   GovernanceObserver

	cfg       atomic.Pointer[govConfig]
	installed atomic.Bool

	mu    sync.Mutex
	kinds map[string]func(Approval)
	subs  map[int]func(GovernanceEvent)
	next  int

	alerts violations

	// actMu orders the halts made through Governance; actor is who the one
	// in progress acts for, read by haltChanged (nil: a halt made on the
	// pump directly). restoring is set while restoreHalt puts a kept halt
	// back in force (it records that itself).
	actMu     sync.Mutex
	actor     atomic.Pointer[string]
	restoring atomic.Bool
	// held are the events of the halt in progress, told once actMu is
	// released (a subscriber may halt in turn); guarded by heldMu.
	heldMu sync.Mutex
	held   []GovernanceEvent

	// mem is the agents' memory law (memory.go), loop their AEIOU loop
	// control (loopcontrol.go).
	mem  *memoryLaw
	loop *loopControl
	// dir is the data directory of a durable organism, where a halt is
	// kept across a restart (halt_state.go); "" in memory.
	dir string
}

// govConfig is what the gate reads of the configuration in force.
type govConfig struct {
	// approvals are the listeners with an approval list, by lower-cased
	// name.
	approvals map[string]listenerApproval
	// waits are every listener's approval wait, by lower-cased name.
	waits       map[string]time.Duration
	alertAfter  int
	alertWindow time.Duration
}

// listenerApproval is one listener's approval list.
type listenerApproval struct {
	targets map[string]bool // lower-cased
}

// newGovernance loads the constitution documents of cfg (file:line on any
// problem) and builds the organism's governance over p.
func newGovernance(cfg *config.Organism, p *pump.Pump, s *store.Store, opts Options) (*Governance, error) {
	var agents []string
	for _, lc := range cfg.Listeners {
		if lc.Agent {
			agents = append(agents, lc.Name)
		}
	}
	guard, err := guardian.Load(cfg.Constitution, agents)
	if err != nil {
		return nil, fmt.Errorf("%s: constitution: %w", cfg.Pos("constitution"), err)
	}
	dir := ""
	if s != nil {
		dir = s.Dir()
	}
	ids, err := loadApprovalIDs(dir)
	if err != nil {
		return nil, err
	}
	g := &Governance{pump: p, guard: guard, book: newApprovalBook(s), ids: ids, log: opts.Logger, clock: opts.Clock,
		obs: opts.GovernanceObserver, kinds: map[string]func(Approval){}, subs: map[int]func(GovernanceEvent){}}
	p.OnHaltChange(g.haltChanged)
	g.kinds[KindTool] = g.settleHeld
	g.kinds[KindReview] = g.settleHeld
	g.kinds[KindMemory] = g.settleHeld
	g.dir = dir
	g.mem = newMemoryLaw(g, s, opts)
	if g.loop, err = newLoopControl(cfg, opts); err != nil {
		return nil, err
	}
	g.configure(cfg)
	return g, nil
}

// configure reads the approval lists and alert limits of cfg (at assembly
// and after every reload) and installs the gate when there is anything to
// govern.
func (g *Governance) configure(cfg *config.Organism) {
	c := &govConfig{approvals: map[string]listenerApproval{}, waits: map[string]time.Duration{},
		alertAfter: cfg.Governance.AlertAfter, alertWindow: cfg.Governance.AlertWindow.D()}
	for _, lc := range cfg.Listeners {
		key := strings.ToLower(lc.Name)
		c.waits[key] = lc.ApprovalWait()
		if len(lc.Approval) == 0 {
			continue
		}
		la := listenerApproval{targets: map[string]bool{}}
		for _, t := range lc.Approval {
			la.targets[strings.ToLower(strings.TrimSpace(t))] = true
		}
		c.approvals[key] = la
	}
	g.cfg.Store(c)
	g.mem.configure(cfg)
	g.install(len(c.approvals) > 0 || g.guard.HasRules() || len(g.book.pendingList()) > 0 || g.mem.any())
}

// install makes g the pump's delivery gate (once on, it stays on: held
// messages need it).
func (g *Governance) install(want bool) {
	if want && g.installed.CompareAndSwap(false, true) {
		g.pump.SetGate(g)
	}
}

// Guardian returns the guardian (the constitution documents and rules).
func (g *Governance) Guardian() *guardian.Guardian { return g.guard }

// constitution is the constitution text of the agent called name.
func (g *Governance) constitution(name string) string {
	return g.guard.Constitution(name, llm.Constitution())
}

// constituted gives an agent listener, configured as lc in cfg, its
// constitution text, its memory tools and its loop control.
func (g *Governance) constituted(l pump.Listener, cfg *config.Organism, lc config.Listener) pump.Listener {
	if a, ok := l.Handler.(*llm.Agent); ok {
		a.Constitution = g.constitution(l.Name)
		a.AbandonCallsAfter = g.abandonAfter(cfg, lc)
		g.mem.equip(&l, a, cfg, lc)
		g.loop.equip(a, lc)
	}
	return l
}

// abandonAfter is how long the calls of the agent configured as lc may go
// without a result before a new message gives them up (0: the agent's
// default). A call held for a human — its approval list, a review rule,
// memory consent ask — waits up to the agent's approval_timeout: given up
// before, it would still wait for a decision, and a human approving it
// would run a call nobody reads the result of. The same holds for a call
// to a peer agent whose own calls may be held (at any depth): its answer
// waits for that decision too.
func (g *Governance) abandonAfter(cfg *config.Organism, lc config.Listener) time.Duration {
	review := false
	for _, r := range g.guard.Rules() {
		review = review || r.Action == guardian.Review
	}
	// wait is the longest a call may wait: a held call's approval_timeout,
	// and a margin for each agent its refusal then passes through.
	wait := time.Duration(-1)
	seen := map[string]bool{}
	var visit func(l config.Listener, depth int)
	visit = func(l config.Listener, depth int) {
		if seen[strings.ToLower(l.Name)] {
			return
		}
		seen[strings.ToLower(l.Name)] = true
		consent, memory := cfg.MemoryConsent(l)
		if review || len(l.Approval) > 0 || memory && consent == config.ConsentAsk {
			wait = max(wait, l.ApprovalWait()+time.Duration(depth)*approvalSettleMargin)
		}
		for _, name := range l.Peers {
			if p, ok := cfg.Listener(name); ok && p.Agent {
				visit(p, depth+1)
			}
		}
	}
	visit(lc, 1)
	if wait < 0 {
		return 0
	}
	return max(llm.DefaultAbandonCallsAfter, wait)
}

// approvalSettleMargin is how long after its approval times out a held
// call's refusal is given to reach its agent before the call may be given
// up.
const approvalSettleMargin = time.Minute

// checkReload refuses a configuration that gives agents what only a
// restart can: memory when the organism started without it, loop control
// whose keys cannot be made.
func (g *Governance) checkReload(cfg *config.Organism) error {
	return errors.Join(g.mem.checkReload(cfg), g.loop.checkReload(cfg))
}

// withConstitutions gives a completer each agent's constitution text.
func (g *Governance) withConstitutions(c *llm.Completer) *llm.Completer {
	if c == nil {
		return nil
	}
	c.Constitutions = map[string]string{}
	for name := range c.Prompts {
		c.Constitutions[name] = g.constitution(name)
	}
	return c
}

// Check implements pump.DeliveryGate: a recovered message finds its
// approval again; otherwise the guardian's rules decide (deny refuses,
// review holds), then the sender's approval list (hold).
func (g *Governance) Check(m *pump.GateMessage) pump.GateDecision {
	if m.Recovered && m.Seq > 0 {
		a, found, err := g.heldApproval(context.Background(), m.Seq, m.Target)
		if err != nil {
			g.log.Error("approvals: look up a recovered message's approval", "seq", m.Seq, "listener", m.Target, "error", err)
		}
		if found {
			return g.resumeHeld(a)
		}
	}
	v := g.guard.Check(guardian.Subject{From: m.From, To: m.Target, FromAgent: m.FromAgent, ToAgent: m.TargetAgent,
		Payload: m.Payload, Answered: m.Answered})
	switch v.Action {
	case guardian.Deny:
		r := v.Refusal()
		g.decided(m, "deny", "guardian", v.RuleIDs(), r.Reason, "")
		g.violated(m.From, v.RuleIDs())
		return pump.GateDecision{Verdict: pump.GateRefuse, Refusal: r}
	case guardian.Review:
		r := v.Refusal()
		return g.hold(m, KindReview, "constitution review: "+v.Reason(), v.RuleIDs(), r.Suggestion, r.Severity)
	}
	if d, ok := g.mem.gate(m); ok {
		return d
	}
	c := g.cfg.Load()
	if len(c.approvals) > 0 {
		if la, ok := c.approvals[strings.ToLower(m.From)]; ok && la.targets[strings.ToLower(m.Target)] {
			return g.hold(m, KindTool, fmt.Sprintf("%s's calls to %s wait for a human (approval list)", m.From, m.Target),
				nil, "", "")
		}
	}
	return pump.GateDecision{}
}

// CheckFailure implements pump.FailureGate: a failure reaching an agent —
// a <huh> or SystemError whose detail may carry a tool's error text — is
// judged by the deny rules like any message, and one that matches is
// replaced by the refusal. Review rules do not hold a failure (nothing
// could run it later): it is delivered.
func (g *Governance) CheckFailure(m *pump.GateMessage) *xmlpipe.Refusal {
	v := g.guard.Check(guardian.Subject{From: m.From, To: m.Target, FromAgent: m.FromAgent, ToAgent: m.TargetAgent,
		Payload: m.Payload, Detail: m.Detail})
	if v.Action != guardian.Deny {
		return nil
	}
	r := v.Refusal()
	g.decided(m, "deny", "guardian", v.RuleIDs(), r.Reason, "")
	return r
}

// heldApproval finds the approval of the message journaled as seq for
// target: under its id, or under the id releases before the approval id
// secret gave it (legacyApprovalID) when that one holds the same message.
func (g *Governance) heldApproval(ctx context.Context, seq int64, target string) (Approval, bool, error) {
	a, found, err := g.book.find(ctx, g.ids.held(seq, target))
	if found || err != nil {
		return a, found, err
	}
	a, found, err = g.book.find(ctx, legacyApprovalID(seq, target))
	if !found || err != nil || a.Seq != seq || !strings.EqualFold(a.Target, target) {
		return Approval{}, false, err
	}
	return a, true, nil
}

// resumeHeld is the decision about a recovered message whose approval was
// found: still pending, it is held again under the same id; approved, it
// is delivered; denied or expired, it is refused.
func (g *Governance) resumeHeld(a Approval) pump.GateDecision {
	switch a.Status {
	case StatusPending:
		g.log.Info("approval: held again after a restart", "approval", a.ID, "agent", a.Agent, "target", a.Target)
		return pump.GateDecision{Verdict: pump.GateHold, HoldID: a.ID}
	case StatusApproved:
		return pump.GateDecision{}
	}
	return pump.GateDecision{Verdict: pump.GateRefuse, Refusal: a.Refusal()}
}

// hold creates the approval of m and holds it.
func (g *Governance) hold(m *pump.GateMessage, kind, why string, rules []string, suggestion, severity string) pump.GateDecision {
	now := g.clock()
	wait := g.waitFor(m)
	a := Approval{ID: g.ids.held(m.Seq, m.Target), Kind: kind, Seq: m.Seq, Conversation: m.Conversation,
		Thread: m.Thread, Agent: m.From, Target: m.Target, User: m.User, Payload: string(m.Envelope), RequestReason: why, Rules: rules,
		Suggestion: suggestion, Severity: severity, CreatedAt: now, ExpiresAt: now.Add(wait), Status: StatusPending}
	if err := g.book.add(a, g.expire); err != nil {
		g.log.Error("approvals: cannot record an approval; the message is refused", "agent", m.From, "target", m.Target,
			"error", err)
		return pump.GateDecision{Verdict: pump.GateRefuse,
			Refusal: stage.NewRefusal("the approval this call needs could not be recorded", "", stage.SeverityMedium)}
	}
	decision := "hold"
	if kind == KindReview {
		decision = "review"
	}
	g.decided(m, decision, "guardian", rules, why, a.ID)
	g.emit(GovernanceEvent{Kind: EventApproval, Time: now, Approval: &a})
	return pump.GateDecision{Verdict: pump.GateHold, HoldID: a.ID}
}

// waitFor is how long m's approval waits: its sender's approval_timeout
// when the sender is a configured listener, else its target's, else the
// default.
func (g *Governance) waitFor(m *pump.GateMessage) time.Duration {
	c := g.cfg.Load()
	if d, ok := c.waits[strings.ToLower(m.From)]; ok {
		return d
	}
	if d, ok := c.waits[strings.ToLower(m.Target)]; ok {
		return d
	}
	return config.DefaultApprovalTimeout
}

// Dropped implements pump.DeliveryGate: the held message's conversation
// was killed, or its answer cancelled, so its approval expires — for the
// reason the conversation's completion gives.
func (g *Governance) Dropped(id string, cause error) {
	var reason string
	switch {
	case errors.Is(cause, pump.ErrConversationKilled):
		reason = pump.KilledReason
	case errors.Is(cause, pump.ErrCancelled):
		reason = pump.CancelledReason
	default:
		reason = cause.Error()
	}
	if _, err := g.finish(context.Background(), id, StatusExpired, "", reason); err != nil &&
		!errors.Is(err, ErrApprovalDecided) && !errors.Is(err, ErrApprovalNotFound) {
		g.log.Error("approvals: expire the approval of a killed conversation", "approval", id, "error", err)
	}
}

// expire ends an approval whose wait timed out: the sender is refused with
// "approval timed out".
func (g *Governance) expire(id string) {
	a, err := g.finish(context.Background(), id, StatusExpired, "", ApprovalTimedOut)
	if err != nil {
		if !errors.Is(err, ErrApprovalDecided) && !errors.Is(err, ErrApprovalNotFound) {
			g.log.Error("approvals: expire", "approval", id, "error", err)
		}
		return
	}
	g.settle(a)
}

// Decide approves or denies the pending approval id on behalf of by, with
// an optional reason. Approved, the held call is delivered; denied, its
// sender gets a refusal ("denied by <by>: <reason>"). It fails with
// ErrApprovalNotFound or ErrApprovalDecided.
func (g *Governance) Decide(ctx context.Context, id string, approve bool, by, reason string) (Approval, error) {
	status := StatusDenied
	if approve {
		status = StatusApproved
	}
	if strings.TrimSpace(by) == "" {
		by = "operator"
	}
	a, err := g.finish(ctx, id, status, by, strings.TrimSpace(reason))
	if err != nil {
		return Approval{}, err
	}
	g.settle(a)
	return a, nil
}

// finish records a decision, audits it and tells the subscribers.
func (g *Governance) finish(ctx context.Context, id, status, by, reason string) (Approval, error) {
	a, err := g.book.decide(ctx, id, status, by, reason, g.clock())
	if err != nil {
		return Approval{}, err
	}
	who := by
	if who == "" {
		who = "organism"
	}
	g.audit(a.Conversation, a.Thread, a.Agent, a.Target, status, who, a.Rules, reason, a.ID, a.Seq)
	g.emit(GovernanceEvent{Kind: EventApprovalDecided, Time: a.DecidedAt, Approval: &a})
	return a, nil
}

// settle carries out a decision through the handler of its kind.
func (g *Governance) settle(a Approval) {
	g.mu.Lock()
	fn := g.kinds[a.Kind]
	g.mu.Unlock()
	if fn == nil {
		g.log.Warn("approvals: no handler for this kind of approval; the decision is recorded only", "approval", a.ID,
			"kind", a.Kind)
		return
	}
	fn(a)
}

// settleHeld carries out a decision about a held message: approved, it is
// released; otherwise refused. A message not held (yet) — after a
// restart, before recovery re-delivers it — finds the decision then.
func (g *Governance) settleHeld(a Approval) {
	settle := func() error {
		if a.Status == StatusApproved {
			return g.pump.Release(a.ID)
		}
		return g.pump.RefuseHeld(a.ID, a.Refusal())
	}
	err := settle()
	if errors.Is(err, pump.ErrNotHeld) {
		// The gate may be holding the message right now, having read the
		// approval still pending (the approval is recorded before the
		// hold is taken): once that decision ends, the hold is there. A
		// gate check after this decision finds it (resumeHeld).
		g.pump.AwaitGate(a.Conversation)
		err = settle()
	}
	switch {
	case errors.Is(err, pump.ErrNotHeld):
		g.log.Info("approvals: decided a message that is not held now; it is settled when it is re-delivered",
			"approval", a.ID, "status", a.Status)
	case err != nil:
		g.log.Warn("approvals: settle a held message", "approval", a.ID, "status", a.Status, "error", err)
	}
}

// HandleKind makes fn carry out the decisions about approvals of kind
// (approved, denied or expired), for kinds requested with Request. fn runs
// on the deciding goroutine and must not block for long.
func (g *Governance) HandleKind(kind string, fn func(Approval)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.kinds[kind] = fn
}

// Request asks a human for an approval of another kind than a held
// message (memory consent, say): a.Kind, Agent, and what describes it
// (Conversation, Thread, Target, Payload, RequestReason) are kept; wait
// bounds the wait (0: the default). The decision goes to the function
// HandleKind registered for the kind. It returns the pending approval.
func (g *Governance) Request(a Approval, wait time.Duration) (Approval, error) {
	if a.Kind == "" || a.Kind == KindTool || a.Kind == KindReview {
		return Approval{}, fmt.Errorf("organism: request an approval: kind %q is not for requests", a.Kind)
	}
	if wait <= 0 {
		wait = config.DefaultApprovalTimeout
	}
	now := g.clock()
	a.ID, a.Seq, a.Status, a.CreatedAt, a.ExpiresAt = randomApprovalID(), 0, StatusPending, now, now.Add(wait)
	a.DecidedBy, a.Reason, a.DecidedAt = "", "", time.Time{}
	if err := g.book.add(a, g.expire); err != nil {
		return Approval{}, err
	}
	g.audit(a.Conversation, a.Thread, a.Agent, a.Target, "hold", "organism", nil, a.RequestReason, a.ID, 0)
	g.emit(GovernanceEvent{Kind: EventApproval, Time: now, Approval: &a})
	return a, nil
}

// Approvals lists approvals, newest first.
func (g *Governance) Approvals(ctx context.Context, f ApprovalFilter) ([]Approval, error) {
	return g.book.list(ctx, f)
}

// Approval returns the approval id (ErrApprovalNotFound when there is
// none).
func (g *Governance) Approval(ctx context.Context, id string) (Approval, error) {
	a, found, err := g.book.find(ctx, id)
	switch {
	case err != nil:
		return Approval{}, err
	case !found:
		return Approval{}, fmt.Errorf("%w: %s", ErrApprovalNotFound, id)
	}
	return a, nil
}

// awaits reports whether the message journaled as seq for listener waits
// for, or was granted, an approval not carried out yet: recovery must
// re-deliver it whatever else the journal says.
func (g *Governance) awaits(seq int64, listener string) bool {
	a, found, _ := g.heldApproval(context.Background(), seq, listener)
	return found && (a.Status == StatusPending || a.Status == StatusApproved)
}

// Subscribe calls fn with every governance event from now on (on the
// goroutine that caused it: fn must not block); the returned func stops it.
func (g *Governance) Subscribe(fn func(GovernanceEvent)) (cancel func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	id := g.next
	g.next++
	g.subs[id] = fn
	return func() {
		g.mu.Lock()
		delete(g.subs, id)
		g.mu.Unlock()
	}
}

// emit tells the subscribers.
func (g *Governance) emit(e GovernanceEvent) {
	g.mu.Lock()
	fns := make([]func(GovernanceEvent), 0, len(g.subs))
	for _, fn := range g.subs {
		fns = append(fns, fn)
	}
	g.mu.Unlock()
	for _, fn := range fns {
		fn(e)
	}
}

// decided audits a decision the gate made about m.
func (g *Governance) decided(m *pump.GateMessage, decision, by string, rules []string, reason, approval string) {
	g.audit(m.Conversation, m.Thread, m.From, m.Target, decision, by, rules, reason, approval, m.Seq)
}

// decisionRecord is the journaled description of a governance decision.
type decisionRecord struct {
	XMLName  xml.Name `xml:"https://xml-pipeline.org/ns/core/v1 decision"`
	Decision string   `xml:"decision,attr"`
	By       string   `xml:"by,attr"`
	Seq      int64    `xml:"seq,attr,omitempty"`
	Approval string   `xml:"approval,attr,omitempty"`
	Rules    []string `xml:"rule"`
	Reason   string   `xml:"reason,omitempty"`
}

// audit records a governance decision: a journal record (kind decision), a
// log line (a security event for a denial) and the observer's count.
func (g *Governance) audit(conv, thread, from, target, decision, by string, rules []string, reason, approval string, seq int64) {
	body, err := xml.Marshal(decisionRecord{Decision: decision, By: by, Seq: seq, Approval: approval, Rules: rules,
		Reason: reason})
	if err != nil {
		body = []byte("<decision/>")
	}
	text := decision + " by " + by
	if len(rules) > 0 {
		text += " (rule " + strings.Join(rules, ", ") + ")"
	}
	if approval != "" {
		text += " approval " + approval
	}
	if seq > 0 {
		text += " of seq " + strconv.FormatInt(seq, 10)
	}
	if reason != "" {
		text += ": " + reason
	}
	g.pump.Audit(pump.Record{Time: g.clock(), Direction: pump.Outbound, Kind: pump.RecordDecision, Conversation: conv,
		Thread: thread, From: from, To: target, Listener: target, PayloadTag: "decision", Envelope: body,
		Diagnostics: []failure.Diagnostic{{Msg: text}}})
	attrs := []any{"decision", decision, "by", by, "from", from, "to", target, "thread", thread, "rules", rules,
		"approval", approval, "reason", reason}
	if decision == "deny" || decision == StatusDenied {
		g.log.Warn("security event: governance refused a message", append([]any{"security", true}, attrs...)...)
	} else {
		g.log.Info("governance decision", attrs...)
	}
	if g.obs != nil {
		if len(rules) == 0 {
			g.obs.GovernanceDecision("", decision)
		}
		for _, r := range rules {
			g.obs.GovernanceDecision(r, decision)
		}
	}
}

// violations counts refused messages per sender in a sliding window.
type violations struct {
	mu   sync.Mutex
	seen map[string][]time.Time
}

// violated counts a refusal of sender's message and alerts the operators
// when it makes alert_after within alert_window (then the count starts
// over).
func (g *Governance) violated(sender string, rules []string) {
	c := g.cfg.Load()
	if c.alertAfter <= 0 {
		return
	}
	now := g.clock()
	v := &g.alerts
	v.mu.Lock()
	if v.seen == nil {
		v.seen = map[string][]time.Time{}
	}
	ts := v.seen[sender]
	keep := ts[:0]
	for _, t := range ts {
		if now.Sub(t) < c.alertWindow {
			keep = append(keep, t)
		}
	}
	keep = append(keep, now)
	n := len(keep)
	if n >= c.alertAfter {
		delete(v.seen, sender)
	} else {
		v.seen[sender] = keep
	}
	if len(v.seen) > 10000 { // bound the senders remembered
		for k := range v.seen {
			delete(v.seen, k)
			break
		}
	}
	v.mu.Unlock()
	if n < c.alertAfter {
		return
	}
	alert := &GuardianAlert{Sender: sender, Count: n, Window: c.alertWindow, Rules: rules}
	g.log.Warn("security event: repeated constitution violations", "security", true, "sender", sender, "count", n,
		"window", c.alertWindow, "rules", rules)
	g.emit(GovernanceEvent{Kind: EventGuardianAlert, Time: now, Alert: alert})
}

// Halt is the emergency stop (pump.Pump.Halt) on behalf of by: the agents
// (scope HaltAgents) or every listener stop at once — model requests are
// aborted, running handlers' contexts cancelled, queued messages held —
// until Resume. A durable organism keeps the halt across a restart: it
// starts halted until Resume.
func (g *Governance) Halt(by string, scope pump.HaltScope) (pump.HaltReport, error) {
	defer g.acting(by)()
	return g.pump.Halt(scope) // recorded by haltChanged
}

// Resume lifts the halt on behalf of by; it reports whether one was in
// force.
func (g *Governance) Resume(by string) bool {
	defer g.acting(by)()
	if g.pump.Unhalt() { // recorded by haltChanged
		return true
	}
	if err := g.dropHalt(); err != nil { // a kept halt no longer in force
		g.log.Error("emergency halt lifted but still kept: the next start would be halted", "error", err)
	}
	return false
}

// HaltListener is the emergency stop of one listener (pump.Pump.HaltListener)
// on behalf of by: its model requests are aborted, its running handlers'
// contexts cancelled and its queued and new messages held, the other
// listeners serving on, until ResumeListener or Resume. A durable organism
// keeps it across a restart, as Halt's. An unknown name fails with an
// error wrapping pump.ErrUnknownListener.
func (g *Governance) HaltListener(by, name string) (pump.HaltReport, error) {
	defer g.acting(by)()
	return g.pump.HaltListener(name) // recorded by haltChanged
}

// ResumeListener lifts HaltListener's halt of name on behalf of by; it
// reports whether that listener was halted so (an organism halt in force
// still holds it).
func (g *Governance) ResumeListener(by, name string) bool {
	defer g.acting(by)()
	return g.pump.UnhaltListener(name) // recorded by haltChanged
}

// ScopeListener is the scope of a governance event about one listener's
// halt (GovernanceEvent.Listener names it).
const ScopeListener = "listener"

// HaltedListeners returns the listeners halted one by one (HaltListener),
// sorted.
func (g *Governance) HaltedListeners() []string { return g.pump.HaltedListeners() }

// Halted returns the scope of the halt in force ("" and false: none).
func (g *Governance) Halted() (string, bool) {
	s, ok := g.pump.Halted()
	if !ok {
		return "", false
	}
	return s.String(), true
}

// start restores a halt kept from before a restart, loads the pending
// approvals of the store (before recovery re-delivers their held messages)
// and arms their timers.
func (g *Governance) start() error {
	if err := g.restoreHalt(); err != nil {
		return err
	}
	n, err := g.book.load(context.Background(), g.expire)
	if err != nil {
		return fmt.Errorf("organism: load the pending approvals: %w", err)
	}
	if n > 0 {
		g.log.Info("approvals still pending from before the restart", "pending", n)
		g.install(true)
	}
	return nil
}

// stop stops the approvals' timers and closes a private memory store.
func (g *Governance) stop() {
	g.book.stop()
	if err := g.mem.own.close(); err != nil {
		g.log.Warn("memory: close the private store", "error", err)
	}
}

// Governance returns the organism's governance: approvals, the guardian,
// the emergency halt.
func (o *Organism) Governance() *Governance { return o.gov }
