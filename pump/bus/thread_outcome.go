package bus

import (
	"cmp"
	"context"
	"strings"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// Thread statuses of the API that record a decision rather than a failure.
const (
	// statusDenied: a human denied a call of the conversation (an
	// approval), whose agent got the refusal — an operator's decision,
	// not a failure.
	statusDenied = "denied"
)

// threadOutcome is what a thread's journal entries say of how it went,
// for its status: failed (a failure that is neither a human's denial nor
// a cancel's dropping), denied (a call of it a human denied) and cancelled
// (its latest answer was cancelled: the cancel dropped messages and
// nothing was journaled since). Error is the last failure's text.
type threadOutcome struct {
	failed, denied, cancelled bool
	err                       string
}

// outcomeOf reads entries, the journal entries of a thread of conversation
// conv, in order; details says whether failure details may be shown.
func (s *Server) outcomeOf(ctx context.Context, conv string, entries []store.Entry, details bool) threadOutcome {
	var (
		o                       threadOutcome
		lastMessage, lastCancel = -1, -1
		decisions               = s.entryDecisions(ctx)
	)
	for i, e := range entries {
		switch {
		case e.Kind == store.Message:
			lastMessage = i
			continue
		case e.Kind == store.Decision: // a record, not a failure
			continue
		}
		switch decisions.ofIn(conv, e) {
		case statusCancelled:
			lastCancel = i
			continue
		case statusDenied:
			o.denied = true
			continue
		}
		o.failed = true
		if text := huhText(e.Bytes); text != "" {
			o.err = text
		} else if e.Diagnostics != "" {
			o.err = strings.Join(journalDiagnostics(e.Kind, strings.Split(e.Diagnostics, "\n"), details), "\n")
		}
	}
	o.cancelled = lastCancel > lastMessage
	return o
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
	// failing, when set, are the only conversations that recorded a
	// failure (a refusal, a dead letter): the others' entries are not read.
	failing map[string]bool
}

func (s *Server) conversationOutcomes(ctx context.Context, st *store.Store) *conversationOutcomes {
	return &conversationOutcomes{s: s, ctx: ctx, st: st, seen: map[string]threadOutcome{}}
}

// of returns thread's outcome o with its conversation's denial and cancel.
func (c *conversationOutcomes) of(conv string, o threadOutcome) (threadOutcome, error) {
	if conv == "" || c.failing != nil && !c.failing[conv] {
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
	o.denied, o.cancelled = co.denied, co.cancelled
	return o, nil
}

// entryDecisions tells the journal entries that record an operator's
// decision rather than a failure (the Message model's outcome), as
// outcomeOf does: a cancel's dead letter, a refusal a denied approval
// answered with. Each conversation's denied approvals are read once.
type entryDecisions struct {
	s       *Server
	ctx     context.Context
	denials map[string]map[string]bool
}

func (s *Server) entryDecisions(ctx context.Context) *entryDecisions {
	return &entryDecisions{s: s, ctx: ctx, denials: map[string]map[string]bool{}}
}

// of is the decision entry e records: statusCancelled, statusDenied, or
// "" (a message, or a failure).
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
		denials, ok := d.denials[conv]
		if !ok {
			denials = d.s.denialReasons(d.ctx, conv)
			d.denials[conv] = denials
		}
		if denials[refusalReason(e.Bytes)] {
			return statusDenied
		}
	}
	return ""
}

// denialReasons are the reasons of the refusals the denied approvals of
// conv answered with.
func (s *Server) denialReasons(ctx context.Context, conv string) map[string]bool {
	out := map[string]bool{}
	if conv == "" {
		return out
	}
	as, err := s.opts.Organism.Governance().Approvals(ctx, organism.ApprovalFilter{Thread: conv,
		Status: organism.StatusDenied})
	if err != nil {
		s.log.Warn("thread status: denied approvals lookup failed", "thread", conv, "error", err)
		return out
	}
	for _, a := range as {
		out[a.Refusal().Reason] = true
	}
	return out
}

// refusalReason is the reason of the <refusal> in env ("" for none).
func refusalReason(env []byte) string { return coreChildText(env, "refusal", "reason") }

// completionStatus is the status a conversation's completion e gives it on
// the event stream, as GET /api/v1/threads/{id} reads it once journaled:
// killed, cancelled (its answer was), denied (a human denied a call of
// it, in this server's run), else completed.
func (s *Server) completionStatus(e pump.Event) string {
	switch {
	case e.Error == pump.KilledReason:
		return statusKilled
	case e.Error == pump.CancelledReason:
		return statusCancelled
	case s.denied.has(e.Conversation):
		return statusDenied
	}
	return statusCompleted
}
