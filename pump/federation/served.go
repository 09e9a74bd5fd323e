package federation

import (
	"errors"
	"fmt"
	"strings"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/registry/store"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
)

// served is a conversation begun for a peer's call: where its answer goes.
type served struct {
	g          *gateway
	linkThread string
	answered   bool
	// rowGone: an answer's outbox entry was queued with the deletion of
	// the conversation's served row (sendAnswer).
	rowGone bool
	// failed: a message of the conversation failed inside this organism
	// (a <huh> or SystemError to one of its listeners, a dead letter).
	// Completed without an answer, the call then gets a <huh>, not an end.
	failed bool
}

// loadServed restores the conversations serving calls when the organism
// stopped: their answers, after the pump's recovery re-delivers their
// messages, still go to the peer. Those of a gateway not running now wait
// in the state until one of that name is added (adoptServed).
func (m *Manager) loadServed() error {
	all, err := m.db.servedAll()
	if err != nil {
		return err
	}
	m.smu.Lock()
	defer m.smu.Unlock()
	for conv, v := range all {
		if g := m.byName[strings.ToLower(v[0])]; g != nil {
			m.served[conv] = &served{g: g, linkThread: v[1]}
		}
	}
	return nil
}

// adoptServed restores, for g — a gateway a reload added — the
// conversations an earlier run served for a gateway of its name, which
// loadServed left alone as none ran at start, and sends the answers those
// left (resendAnswers): a gateway added back by a reload answers its
// peer's calls as one present at start does. A conversation some running
// gateway serves already (a gateway of that name removed in this life) is
// left to it: answerThrough hands its answer to g.
func (m *Manager) adoptServed(g *gateway) error {
	all, err := m.db.servedAll()
	if err != nil {
		return err
	}
	convs := map[string]*served{}
	m.smu.Lock()
	for conv, v := range all {
		if strings.EqualFold(v[0], g.name) && m.served[conv] == nil {
			s := &served{g: g, linkThread: v[1]}
			m.served[conv] = s
			convs[conv] = s
		}
	}
	m.smu.Unlock()
	if len(convs) == 0 {
		return nil
	}
	g.log.Info("federation: conversations an earlier run served for this gateway restored", "conversations", len(convs))
	return m.resendAnswersOf(convs)
}

// killedHere is the refusal a call gets whose conversation was killed on
// this side before it answered.
const killedHere = "the conversation serving the call was killed before it answered"

// cancelledHere is the refusal a call gets whose conversation's answer was
// cancelled on this side (cancel-thread, POST …/cancel) before it answered.
const cancelledHere = "the answer of the conversation serving the call was cancelled before it was given"

// resendAnswers sends the answers that served conversations gave before
// the organism stopped but whose outbox entries a crash lost. An answer's
// entry is queued once the pump's event says what it answers is durable,
// so it commits after that: after the journal record of a reply, after
// the delivery mark of the message whose handler failed (a huh) or ended
// the conversation (an end). The pump's recovery then neither re-delivers
// a reply to an outside party nor runs again a handler whose output, or
// whose delivery mark, is durable: a crash between the two commits would
// leave the call unanswered. The served row goes in the entry's
// transaction (db.enqueueAnswerThen), so a row still there has no answer
// kept. For such a conversation the journal decides: the reply it holds
// is sent again (the peer drops an answer to a call already answered);
// without one, a conversation whose call is journaled and delivered with
// nothing of it left to re-deliver is over — a huh is sent again if it
// failed anywhere (a huh to the peer, or a failure inside, as the live
// path answers: onEvent), with the generic text (the canned one is not
// journaled), else its end. Any other conversation is left to the recovery.
func (m *Manager) resendAnswers() error {
	m.smu.Lock()
	convs := make(map[string]*served, len(m.served))
	for conv, s := range m.served {
		convs[conv] = s
	}
	m.smu.Unlock()
	return m.resendAnswersOf(convs)
}

// resendAnswersOf is resendAnswers for the served conversations convs.
func (m *Manager) resendAnswersOf(convs map[string]*served) error {
	st := m.opts.Store
	if st == nil {
		return nil
	}
	var open map[string]bool // conversations with a message to re-deliver
	for conv, s := range convs {
		entries, err := st.Conversation(conv)
		if err != nil {
			return fmt.Errorf("federation: served conversation %s: %w", conv, err)
		}
		var reply *store.Entry
		called, failed := false, false
		for i := range entries {
			e := &entries[i]
			switch {
			case e.Direction == store.Inbound && strings.EqualFold(e.From, s.g.name):
				called = true
			case e.Direction == store.Outbound && strings.EqualFold(e.To, s.g.name) && e.Kind == store.Message:
				if reply == nil {
					reply = e
				}
			}
			// A failure anywhere in the conversation — a huh to the peer,
			// or inside (a huh or SystemError to a listener, a dead
			// letter) — makes an answerless end a huh, as onEvent does.
			failed = failed || failedInside(e.Kind)
		}
		lt := s.linkThread
		var a *envelope
		switch {
		case reply != nil:
			name, ns, payload, err := payloadOf(reply.Bytes)
			if err != nil {
				s.g.log.Error("federation: journaled reply not sent again", "thread", conv, "seq", reply.Seq, "error", err)
				continue
			}
			a = &envelope{Thread: lt, Link: link{Kind: KindReply, Ref: lt}, Payload: payload, PayloadName: name, PayloadNS: ns}
		case !called: // never injected: the peer's resend of the call is
			continue
		default:
			if open == nil {
				if open, err = undeliveredConversations(st); err != nil {
					return err
				}
			}
			if open[conv] {
				continue
			}
			a = &envelope{Thread: lt, Link: link{Kind: KindEnd, Ref: lt}}
			if failed {
				a.Link = link{Kind: KindHuh, Ref: lt, Error: failure.HuhProcessing}
			}
		}
		m.smu.Lock()
		s.answered = true
		m.smu.Unlock()
		s.g.log.Info("federation: an answer given before a crash is sent again", "thread", conv, "kind", a.Link.Kind)
		if err := s.g.sendAnswer(a, conv); err != nil {
			s.g.log.Error("federation: answer to the peer lost", "kind", a.Link.Kind, "error", err)
		}
	}
	return nil
}

// failedInside reports whether a journal entry of kind k records a failure
// of a served conversation's message: what onEvent hears as an EventHuh,
// EventSystemError or EventDeadLetter.
func failedInside(k store.Kind) bool {
	return k == store.Huh || k == store.SystemError || k == store.DeadLetter
}

// undeliveredConversations lists the conversations with a journaled
// message the pump's recovery re-delivers.
func undeliveredConversations(st *store.Store) (map[string]bool, error) {
	open := map[string]bool{}
	var after int64
	for {
		page, err := st.UndeliveredAfter(after, 256)
		if err != nil {
			return nil, fmt.Errorf("federation: undelivered messages: %w", err)
		}
		if len(page) == 0 {
			return open, nil
		}
		for i := range page {
			open[page[i].Conversation] = true
		}
		after = page[len(page)-1].Seq
	}
}

// serveBegin records conv as serving g's call on linkThread before the
// call is injected: at once in memory, and in the state in a coming commit
// (db.serveBegin): the one the call's journal record waits for when a
// journal decides for a received call (Options.Known), else one of its
// own. The returned channel is told the outcome once it is durable.
func (m *Manager) serveBegin(conv string, g *gateway, linkThread string) <-chan error {
	m.smu.Lock()
	m.served[conv] = &served{g: g, linkThread: linkThread}
	m.smu.Unlock()
	begun := make(chan error, 1)
	m.db.serveBegin(conv, g.name, linkThread, m.now(), m.opts.Known == nil, func(err error) { begun <- err })
	return begun
}

// serveEnd forgets conv; refused says its call was not injected after all.
func (m *Manager) serveEnd(conv string, refused bool) {
	m.smu.Lock()
	delete(m.served, conv)
	m.smu.Unlock()
	if refused {
		m.db.recent.forget(conv)
	}
	m.db.serveEnd(conv, refused, func(err error) { m.log.Warn("federation: served", "thread", conv, "error", err) })
}

// serving reports whether conv serves a call now.
func (m *Manager) serving(conv string) bool {
	m.smu.Lock()
	defer m.smu.Unlock()
	return m.served[conv] != nil
}

// onEvent sends the peer what a served conversation answers its root
// sender (the gateway): its reply, its <huh>, or — when it completes
// without either — end. Events come from the pump's subscription, after
// the journal holds them, in the pump's order.
func (m *Manager) onEvent(ev pump.Event) {
	switch ev.Kind {
	case pump.EventReply, pump.EventHuh, pump.EventComplete, pump.EventSystemError, pump.EventDeadLetter:
	default:
		return
	}
	m.smu.Lock()
	s := m.served[ev.Conversation]
	if s != nil && ev.Kind != pump.EventReply && ev.Kind != pump.EventComplete && ev.To != s.g.name {
		s.failed = true // inside this organism; the call's answer says so if none comes
	}
	if s == nil || ev.Kind == pump.EventSystemError || ev.Kind == pump.EventDeadLetter ||
		ev.Kind != pump.EventComplete && (s.answered || ev.To != s.g.name) {
		m.smu.Unlock()
		return
	}
	answered, failed := s.answered, s.failed
	s.answered = true
	m.smu.Unlock()
	g, lt := s.g, s.linkThread
	var e *envelope
	switch ev.Kind {
	case pump.EventReply:
		name, ns, payload, err := payloadOf(ev.Envelope)
		if err != nil {
			g.log.Error("federation: reply not sent", "error", err)
			return
		}
		e = &envelope{Thread: lt, Link: link{Kind: KindReply, Ref: lt}, Payload: payload, PayloadName: name, PayloadNS: ns}
	case pump.EventHuh:
		e = &envelope{Thread: lt, Link: link{Kind: KindHuh, Ref: lt, Error: ev.Error}}
		if _, inside := errors.AsType[*pump.RelayedError](ev.Cause); inside {
			// A failure inside, told up to the caller because the
			// exported listener could not hear it: its text names the
			// listeners it went through, which stay in this organism —
			// the canned words, as for any failure inside (below).
			e.Link.Error = failure.HuhProcessing
		}
		if ev.ChainTooDeep {
			e.Link.Reason = ReasonTooDeep
		}
	case pump.EventComplete:
		switch {
		case answered:
		case ev.Error == pump.KilledReason:
			// Killed here (kill-thread, a budget) before it answered: the
			// caller is told, rather than handed an answerless end as if
			// the callee had nothing to say. (Killed because the caller
			// cancelled, it goes to a call nobody waits for.)
			e = &envelope{Thread: lt, Link: link{Kind: KindHuh, Ref: lt, Error: killedHere}}
		case ev.Error == pump.CancelledReason:
			// Its answer cancelled here: likewise, the caller is told no
			// answer comes (it may call again).
			e = &envelope{Thread: lt, Link: link{Kind: KindHuh, Ref: lt, Error: cancelledHere}}
		case failed:
			// A listener inside failed and the conversation could not
			// answer: the caller hears it failed, in the canned words of
			// a <huh> (what failed, and where, stays in this organism's
			// log and journal), not an end as if it had nothing to say.
			e = &envelope{Thread: lt, Link: link{Kind: KindHuh, Ref: lt, Error: failure.HuhProcessing}}
		default:
			e = &envelope{Thread: lt, Link: link{Kind: KindEnd, Ref: lt}}
		}
	}
	if e != nil {
		if m.beforeAnswer != nil {
			m.beforeAnswer(ev.Conversation)
		}
		if err := m.answerThrough(g, e, ev.Conversation); err != nil {
			g.log.Error("federation: answer to the peer lost", "kind", e.Link.Kind, "error", err)
		} else {
			m.smu.Lock()
			s.rowGone = true
			m.smu.Unlock()
		}
	}
	if ev.Kind == pump.EventComplete {
		// The answer's (or end's) outbox entry deleted the served row in
		// its transaction: only the memory of it is left to drop. Else
		// the row goes after the end's entry: it is never gone while the
		// end is not kept (writes commit in order).
		m.smu.Lock()
		gone := s.rowGone
		if gone {
			delete(m.served, ev.Conversation)
		}
		m.smu.Unlock()
		if !gone {
			m.serveEnd(ev.Conversation, false)
		}
	}
}
