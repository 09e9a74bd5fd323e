package bus

import (
	"context"
	"strings"
	"sync"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// maxTurnsTracked bounds the conversations whose running answer's
// decisions, and those whose failure, turnDecisions keeps.
const maxTurnsTracked = 4096

// turnDecisions follows, as the organism's events come, the decisions of
// each conversation's running answer — a call denied by a human or by
// policy, an approval that timed out — so that its completion is streamed
// with the status GET /api/v1/threads/{id} reads from the journal
// (threadOutcome.decisionStatus, the same rule). An answer that began
// before the server started (recovered after a restart) is read from the
// journal at its completion, as REST reads it.
type turnDecisions struct {
	s *Server
	// since is the highest journal seq assigned when the server started:
	// an answer whose first message is journaled at or below it began
	// before.
	since int64

	mu sync.Mutex
	// turns are the decisions of each conversation's running answer;
	// approvals the reasons of the refusals its decided approvals answer
	// with, and the status each gives (approvalOutcome).
	turns     map[string]threadOutcome
	approvals map[string]map[string]string
	// failed are the conversations whose own thread carried a failure (a
	// <huh>, a SystemError, a dead letter or a refusal that records no
	// decision) while the server ran: REST reads them error from then on
	// (threadOutcome.failed), and so does their completion.
	failed map[string]bool
	// limit bounds turns and failed (maxTurnsTracked). Past it one entry
	// is forgotten and forgotTurns or forgotFailures set: from then on a
	// completion of a conversation the map does not hold is read from the
	// journal (lookup), as REST reads it, rather than taken for one
	// without decisions or failures.
	limit                      int
	forgotTurns, forgotFailure bool
}

func newTurnDecisions(s *Server, since int64) *turnDecisions {
	return &turnDecisions{s: s, since: since, turns: map[string]threadOutcome{},
		approvals: map[string]map[string]string{}, failed: map[string]bool{}, limit: maxTurnsTracked}
}

// approvalDecided notes a decided approval (a governance event).
func (t *turnDecisions) approvalDecided(a organism.Approval) {
	status := approvalOutcome(a)
	if status == "" || a.Conversation == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	reasons := t.approvals[a.Conversation]
	if reasons == nil {
		reasons = map[string]string{}
		t.approvals[a.Conversation] = reasons
	}
	reasons[a.Refusal().Reason] = status
	t.note(a.Conversation, status)
}

// event notes what pump event e says of its conversation's running
// answer: a message from outside on the conversation's thread begins a new
// one; a refusal by policy denies a call of it (an approval's refusal was
// noted with its decision); a failure on the conversation's thread fails
// the conversation.
func (t *turnDecisions) event(e pump.Event) {
	conv := e.Conversation
	if conv == "" {
		return
	}
	switch e.Kind {
	case pump.EventMessage:
		if t.s.beginsTurn(conv, e.Thread, e.From) {
			t.mu.Lock()
			delete(t.turns, conv)
			t.mu.Unlock()
		}
	case pump.EventHuh, pump.EventSystemError:
		t.fail(e)
	case pump.EventDeadLetter:
		if !strings.HasPrefix(e.Error, pump.CancelledReason) { // a cancel's is a decision
			t.fail(e)
		}
	case pump.EventRefusal, pump.EventReply:
		r, ok := e.Payload.(*xmlpipe.Refusal)
		if !ok {
			return
		}
		t.mu.Lock()
		status := refusalDecision(t.approvals[conv], r.Reason, len(r.ViolatedRules) > 0)
		if status != "" {
			t.note(conv, status)
		}
		t.mu.Unlock()
		if status == "" {
			t.fail(e)
		}
	}
}

// fail notes the failure e when it is on its conversation's own thread
// (the thread REST reads the conversation's status from). Past t.limit
// failed conversations, one of the others is forgotten (its completion is
// then read from the journal).
func (t *turnDecisions) fail(e pump.Event) {
	if e.Thread != e.Conversation {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.failed[e.Conversation] && len(t.failed) >= t.limit {
		for other := range t.failed {
			delete(t.failed, other)
			t.forgotFailure = true
			break
		}
	}
	t.failed[e.Conversation] = true
}

// note records status for conv's running answer (t.mu held). Past
// t.limit running answers with decisions, one of the others is forgotten
// (its completion is then read from the journal).
func (t *turnDecisions) note(conv, status string) {
	o, ok := t.turns[conv]
	if !ok && len(t.turns) >= t.limit {
		for other := range t.turns {
			delete(t.turns, other)
			delete(t.approvals, other)
			t.forgotTurns = true
			break
		}
	}
	switch status {
	case statusDenied:
		o.denied = true
	case statusExpired:
		o.expired = true
	}
	t.turns[conv] = o
}

// forget returns the decisions of conv's running answer and forgets them
// (its completion came: the next answer begins afresh). u says what it
// returns may lack of what was forgotten to stay within t.limit: the
// answer's decisions (it holds none) or the conversation's failure (it
// holds none).
func (t *turnDecisions) forget(conv string) (o threadOutcome, u unsure) {
	t.mu.Lock()
	defer t.mu.Unlock()
	o, decided := t.turns[conv]
	o.failed = t.failed[conv] // not forgotten: a failure stays the conversation's
	u = unsure{decisions: t.forgotTurns && !decided, failure: t.forgotFailure && !o.failed}
	delete(t.turns, conv)
	delete(t.approvals, conv)
	return o, u
}

// unsure says which of what turnDecisions followed of a conversation may
// have been forgotten: the decisions of its answer, its failure.
type unsure struct{ decisions, failure bool }

// recovered adds to o, the decisions followed of the answer completion e
// ends, what the journal says of it when it began before the server
// started (recovered after a restart), as REST reads it.
func (t *turnDecisions) recovered(e pump.Event, o threadOutcome) threadOutcome {
	if e.Turn <= 0 || e.Turn > t.since {
		return o
	}
	return t.lookup(e.Conversation, o, unsure{decisions: true, failure: true})
}

// lookup adds to o what the journal says of conversation conv, as u asks
// — the decisions of its latest answer, a failure on its own thread — by
// the rule GET /api/v1/threads/{id} reads it with (outcomeOf): for an
// answer the server did not follow from its beginning, or one whose
// conversation its bounded memory forgot.
func (t *turnDecisions) lookup(conv string, o threadOutcome, u unsure) threadOutcome {
	st := t.s.opts.Store
	if st == nil {
		return o
	}
	if u.decisions {
		j, err := t.s.conversationOutcomes(context.Background(), st).of(conv, threadOutcome{})
		if err != nil {
			t.s.log.Warn("thread status: journal of a conversation unreadable", "conversation", conv, "error", err)
		}
		o.denied, o.expired = o.denied || j.denied, o.expired || j.expired
	}
	if u.failure && !o.failed {
		entries, err := st.Thread(conv)
		if err != nil {
			t.s.log.Warn("thread status: journal of a conversation unreadable", "conversation", conv, "error", err)
		}
		o.failed = t.s.outcomeOf(context.Background(), conv, entries, false).failed
	}
	return o
}
