package bus

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// Thread statuses of the API that record a decision rather than a failure.
const (
	// statusDenied: a call of the conversation's latest answer was denied
	// — by a human (an approval) or by policy (a constitution deny rule,
	// memory law) — and its agent got the refusal: a decision, not a
	// failure.
	statusDenied = "denied"
	// statusExpired: a call of the conversation's latest answer waited for
	// a human who did not decide in time (its approval timed out), and its
	// agent got the refusal "approval timed out": neither a failure nor a
	// human's denial.
	statusExpired = "expired"
)

// threadOutcome is what a thread's journal entries say of how it went,
// for its status: failed (a failure that is no decision: neither a
// denial, an expiry nor a cancel's dropping), denied and expired (a call of
// its latest answer was denied, or its approval expired) and cancelled
// (its latest answer was cancelled: the cancel dropped messages and
// nothing was journaled since). Error is the last failure's text; errMemory
// says that failure is memory traffic (organism.MessageCarriesMemory), its
// text the conversation owner's (organism.MemoryReadable).
type threadOutcome struct {
	failed, denied, expired, cancelled bool
	err                                string
	errMemory                          bool
}

// decisionStatus is the one rule of the status decisions give a
// conversation that no longer runs: cancelled (its latest answer was),
// denied (a call of its latest answer was), expired (a call of its latest
// answer waited in vain), "" none. GET /api/v1/threads (threadStatus) and
// the stream's thread_updated (completionStatus) both read it.
func (o threadOutcome) decisionStatus() string {
	switch {
	case o.cancelled:
		return statusCancelled
	case o.denied:
		return statusDenied
	case o.expired:
		return statusExpired
	}
	return ""
}

// outcomeOf reads entries, the journal entries of a thread of conversation
// conv, in order; details says whether failure details may be shown. A
// denial or an expiry counts when it follows the message that began the
// conversation's latest answer (beginsTurn): a continued conversation
// reads as its new answer went.
func (s *Server) outcomeOf(ctx context.Context, conv string, entries []store.Entry, details bool) threadOutcome {
	var (
		o                                 threadOutcome
		lastMessage, lastCancel, lastTurn = -1, -1, -1
		lastDenied, lastExpired           = -1, -1
		decisions                         = s.entryDecisions(ctx)
	)
	for i, e := range entries {
		switch {
		case e.Kind == store.Message:
			lastMessage = i
			if s.beginsTurn(conv, e.Thread, e.From) {
				lastTurn = i
			}
			continue
		case e.Kind == store.Decision: // a record, not a failure
			continue
		}
		switch decisions.ofIn(conv, e) {
		case statusCancelled:
			lastCancel = i
			continue
		case statusDenied:
			lastDenied = i
			continue
		case statusExpired:
			lastExpired = i
			continue
		}
		o.failed = true
		if text := huhText(e.Bytes); text != "" {
			o.err = text
		} else if e.Diagnostics != "" {
			o.err = strings.Join(journalDiagnostics(e.Kind, strings.Split(e.Diagnostics, "\n"), details), "\n")
		} else {
			continue
		}
		o.errMemory = organism.MessageCarriesMemory(e.From, cmp.Or(e.Listener, e.To), e.Bytes)
	}
	o.cancelled = lastCancel > lastMessage
	o.denied, o.expired = lastDenied > lastTurn, lastExpired > lastTurn
	return o
}

// beginsTurn reports whether a message on thread from from begins an
// answer of conversation conv: one from outside the organism (no listener
// of it) on the conversation's own thread — its first message, or its
// owner's continuation.
func (s *Server) beginsTurn(conv, thread, from string) bool {
	if thread != cmp.Or(conv, thread) {
		return false
	}
	_, listener := s.pump.Lookup(from)
	return !listener
}

// conversationOutcomes reads, once per conversation, whether a
// conversation had a call denied or its latest answer cancelled: decisions
// about the whole conversation, which every thread of it reads (as a kill
// is), while a failure is its thread's.
type conversationOutcomes struct {
	s    *Server
	ctx  context.Context
	st   *store.Store
	seen map[string]threadOutcome
}

func (s *Server) conversationOutcomes(ctx context.Context, st *store.Store) *conversationOutcomes {
	return &conversationOutcomes{s: s, ctx: ctx, st: st, seen: map[string]threadOutcome{}}
}

// read reads the outcomes of the conversations of sums in one pass over
// the journal, instead of one lookup each as of would make.
func (c *conversationOutcomes) read(sums []store.ThreadSummary) error {
	var convs []string
	for _, t := range sums {
		_, seen := c.seen[t.Conversation]
		if t.Conversation != "" && !seen && !slices.Contains(convs, t.Conversation) {
			convs = append(convs, t.Conversation)
		}
	}
	entries, err := c.st.ConversationEntries(convs)
	if err != nil {
		return err
	}
	for _, conv := range convs {
		c.seen[conv] = c.s.outcomeOf(c.ctx, conv, entries[conv], false)
	}
	return nil
}

// of returns thread's outcome o with its conversation's denial and cancel.
func (c *conversationOutcomes) of(conv string, o threadOutcome) (threadOutcome, error) {
	if conv == "" {
		return o, nil
	}
	co, ok := c.seen[conv]
	if !ok {
		entries, err := c.st.Conversation(conv)
		if err != nil {
			return o, err
		}
		co = c.s.outcomeOf(c.ctx, conv, entries, false)
		c.seen[conv] = co
	}
	o.denied, o.expired, o.cancelled = co.denied, co.expired, co.cancelled
	return o, nil
}

// entryDecisions tells the journal entries that record a decision rather
// than a failure (the Message model's outcome), as outcomeOf does: a
// cancel's dead letter, the refusal a denied or expired approval answered
// with, a refusal by policy (naming the rule it applied). Each
// conversation's decided approvals are read once.
type entryDecisions struct {
	s         *Server
	ctx       context.Context
	approvals map[string]map[string]string
}

func (s *Server) entryDecisions(ctx context.Context) *entryDecisions {
	return &entryDecisions{s: s, ctx: ctx, approvals: map[string]map[string]string{}}
}

// of is the decision entry e records: statusCancelled, statusDenied,
// statusExpired, or "" (a message, or a failure).
func (d *entryDecisions) of(e store.Entry) string {
	return d.ofIn(cmp.Or(e.Conversation, e.Thread), e)
}

// ofIn is of for an entry of conversation conv.
func (d *entryDecisions) ofIn(conv string, e store.Entry) string {
	switch e.Kind {
	case store.DeadLetter:
		if strings.HasPrefix(e.Diagnostics, pump.CancelledReason) {
			return statusCancelled
		}
	case store.Refusal:
		reasons, ok := d.approvals[conv]
		if !ok {
			reasons = d.s.approvalRefusals(d.ctx, conv)
			d.approvals[conv] = reasons
		}
		return refusalDecision(reasons, refusalReason(e.Bytes), refusalRule(e.Bytes) != "")
	}
	return ""
}

// refusalDecision is the one rule of what a refusal records: the refusal
// of a decided approval of its conversation (approvals: their refusals'
// reasons, see approvalRefusals) is that approval's outcome — denied or
// expired —, any other naming a rule (a constitution deny rule, memory
// law) a denial by policy; "" a failure.
func refusalDecision(approvals map[string]string, reason string, ruled bool) string {
	if status, ok := approvals[reason]; ok {
		return status
	}
	if ruled {
		return statusDenied
	}
	return ""
}

// approvalRefusals are the reasons of the refusals the decided approvals
// of conv answered with, each with the status it gives: statusDenied for a
// denied approval, statusExpired for one that timed out.
func (s *Server) approvalRefusals(ctx context.Context, conv string) map[string]string {
	out := map[string]string{}
	if conv == "" {
		return out
	}
	as, err := s.opts.Organism.Governance().Approvals(ctx, organism.ApprovalFilter{Thread: conv})
	if err != nil {
		s.log.Warn("thread status: decided approvals lookup failed", "thread", conv, "error", err)
		return out
	}
	for _, a := range as {
		if status := approvalOutcome(a); status != "" {
			out[a.Refusal().Reason] = status
		}
	}
	return out
}

// approvalOutcome is the status a decided approval gives the answer it
// was asked in: statusDenied (denied), statusExpired (timed out), ""
// (pending, approved, or expired with its conversation killed or its
// answer cancelled, which say so themselves).
func approvalOutcome(a organism.Approval) string {
	switch {
	case a.Status == organism.StatusDenied:
		return statusDenied
	case a.Status == organism.StatusExpired && a.Reason == organism.ApprovalTimedOut:
		return statusExpired
	}
	return ""
}

// refusalReason is the reason of the <refusal> in env ("" for none);
// refusalRule the first rule it names as violated.
func refusalReason(env []byte) string { return coreChildText(env, "refusal", "reason") }
func refusalRule(env []byte) string   { return coreChildText(env, "refusal", "violated-rule") }

// completionStatus is the status a conversation's completion e gives it on
// the event stream, as GET /api/v1/threads/{id} reads it once journaled
// (threadStatus): killed, error (a failure on its thread), cancelled (its
// answer was), what the decisions of the answer that completed make of it
// (decisionStatus: denied, expired), else completed. It runs once per
// completion (streamEvents).
func (s *Server) completionStatus(e pump.Event) string {
	o, u := s.turns.forget(e.Conversation) // whatever the answer's end
	if e.Error == pump.KilledReason {
		return statusKilled
	}
	if u.decisions || u.failure { // its bounded memory forgot some: the journal says
		o = s.turns.lookup(e.Conversation, o, u)
	}
	o = s.turns.recovered(e, o)
	switch {
	case o.failed:
		return statusError
	case e.Error == pump.CancelledReason:
		return statusCancelled
	}
	return cmp.Or(o.decisionStatus(), statusCompleted)
}
