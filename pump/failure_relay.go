package pump

import (
	"errors"
	"fmt"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
)

// errorNote is what a pump-generated error message carries beside its
// payload, for the listener told (work.note): the pump's reason, the error
// behind it, where it failed and what it is about. It travels with the
// error message alone, so the work of ordinary messages stays small.
type errorNote struct {
	// detail is what the error says beyond its canned text
	// (xmlpipe.DeliveryError.Detail).
	detail string
	// cause is the error behind it (Event.Cause; nil for none).
	cause error
	// at is the listener whose handling failed, when it is not the one
	// told (a callee of it); "" when the failure is about the told
	// listener's own output.
	at string
	// about is the failure's Event.About.
	about string
	// held is the event of an error for a listener that cannot hear it,
	// not published: its caller's is, once the error is relayed
	// (tellHeld).
	held *Event
}

// tellEvent publishes ev, the event of an error sent to a listener, and
// records it as the failure of an asked conversation (detail the pump's
// reason) unless it is a refusal, which is an answer (refuseHeld).
func (p *Pump) tellEvent(ev Event, detail string) {
	p.publish(nil, ev)
	if ev.Kind != EventRefusal {
		p.asks.strayFailure(ev, detail)
	}
}

// tellHeld publishes the held event of w, an error for a listener that
// cannot hear it, when it is not relayed to anyone: the failure is then
// told as before there were relays, to the subscribers and an asker.
func (p *Pump) tellHeld(w *work) {
	if w.note == nil || w.note.held == nil {
		return
	}
	ev := *w.note.held
	w.note.held = nil
	p.tellEvent(ev, w.note.detail)
}

// RelayedError is a failure told to the caller of a listener that cannot
// hear of it (it has no error handler: a plain Go handler, a WASM guest
// without a response contract): a call it made failed — its callee's
// handler failed, timed out or was refused, the callee's answer has no
// route — or its own message was refused. Told to that listener, the
// failure would reach nobody and its caller would wait for an answer that
// never comes; it travels on up the thread path instead, to the nearest
// party that hears errors: a listener with an error handler (an agent
// shows it to its model) or the conversation's outside party (a <huh>
// event, an Ask's *AskError, a /ws huh frame, an MCP tool error).
//
// errors.Is and errors.As see through it to the failure's own cause — but
// for an *xmlpipe.InputError, which the callee wrote for the listener that
// called it, not for the party told here: that text stays with the
// details, as for any failure further on.
type RelayedError struct {
	// Listener is the listener that could not hear of the failure.
	Listener string
	// At is the listener whose handling failed, a callee of Listener; ""
	// when Listener's own message was refused.
	At string
	// Err is the failure as Listener was told it.
	Err error
}

// Error says whose call failed, and why.
func (e *RelayedError) Error() string {
	what := e.Listener + ": its message failed"
	if e.At != "" {
		what = fmt.Sprintf("%s: its call to %s failed", e.Listener, e.At)
	}
	if e.Err == nil {
		return what
	}
	return what + ": " + e.Err.Error()
}

// Is reports whether the failure's cause is target.
func (e *RelayedError) Is(target error) bool { return e.Err != nil && errors.Is(e.Err, target) }

// As finds target in the failure's cause, but for an *xmlpipe.InputError.
func (e *RelayedError) As(target any) bool {
	if _, ok := target.(**xmlpipe.InputError); ok || e.Err == nil {
		return false
	}
	return errors.As(e.Err, target)
}

// relayText is what the caller of listener is told of a failure whose
// text was text: which call failed — listener's to at, or listener's own
// message (at "") — then the failure's own words. Both names are on the
// conversation's thread path, within the profile of every party it is
// told to: a listener outside it is never reached.
func relayText(listener, at, text string) string {
	if at == "" || lower(at) == lower(listener) {
		return listener + "'s message failed: " + text
	}
	return listener + "'s call to " + at + " failed: " + text
}

// relayed is the error message the caller of l is told in place of v,
// the error l could not hear, whose note is n: the same kind, saying which
// call failed (relayText). A refusal travels as it is: it is the answer
// of whoever refused l's call.
func relayed(l *listener, v any, n *errorNote) any {
	switch e := v.(type) {
	case *xmlpipe.Huh:
		return &xmlpipe.Huh{Error: relayText(l.Name, n.at, e.Error), OriginalAttempt: e.OriginalAttempt}
	case *xmlpipe.SystemError:
		c := *e
		c.Message = relayText(l.Name, n.at, e.Message)
		return &c
	}
	return v
}

// relayError tells the failure v — which reached l, a listener without
// an error handler, on thread (the thread its handler ran on) — to the
// party l was working for: the caller of thread, climbing past the levels
// of l's own self-iteration. A caller that is a listener gets it as an
// error message of its own, on the thread it called l from and bound to
// that call's ref, and — should it have no error handler either — passes
// it on up in turn; an outside caller gets the conversation's event. The
// thread path only climbs, so the relay ends at the conversation's root.
// It reports false, telling nobody, when the registry no longer knows the
// thread (l answered already: its part is over).
func (p *Pump) relayError(w *work, l *listener, thread string, v any, tbl *table) bool {
	n := w.note
	if n == nil {
		n = &errorNote{}
	}
	for range maxSelfLevels {
		caller, reply, ref, err := p.threads.CallerRef(thread)
		if err != nil {
			return false
		}
		if reply != thread {
			// Nothing more comes of l's part (but answers it awaits): the
			// thread ends with its conversation, as a failed hop's does.
			p.spend(w.conv, thread)
		}
		if lower(caller) == lower(l.Name) {
			if reply == thread {
				return false
			}
			thread = reply
			continue
		}
		out := relayed(l, v, n)
		cause := &RelayedError{Listener: l.Name, At: n.at, Err: n.cause}
		at := n.at
		if at == "" {
			at = l.Name
		}
		detail := n.detail
		if detail == "" {
			detail = cause.Error()
		}
		var diags []failure.Diagnostic
		if detail != "" {
			diags = []failure.Diagnostic{{Stage: failure.StageHandler, Msg: detail}}
		}
		prof, _ := p.threads.Profile(reply)
		now := p.opts.Clock()
		kind, tag := RecordHuh, p.core.Huh.Name()
		switch out.(type) {
		case *xmlpipe.SystemError:
			kind, tag = RecordSystemError, p.core.SystemError.Name()
		case *xmlpipe.Refusal:
			kind, tag = RecordRefusal, p.core.Refusal.Name()
		}
		if to := tbl.lookup(caller); to != nil {
			if reply == thread {
				return false // a listener that began the conversation: nobody above it
			}
			p.log.Debug("failure relayed to the caller of a listener without an error handler", "listener", l.Name,
				"at", at, "caller", to.Name, "thread", reply)
			p.record(Record{Time: now, Direction: Outbound, Kind: kind, Conversation: w.conv, Thread: reply,
				From: "core", To: to.Name, Listener: at, PayloadTag: tag, Diagnostics: diags, Profile: prof})
			p.sendErrorNote(w.conv, tbl, to, reply, out, w.depth, ref, &errorNote{detail: detail, cause: cause, at: l.Name,
				about: n.about}, 0)
			return true
		}
		p.log.Debug("failure relayed to the outside caller of a listener without an error handler", "listener", l.Name,
			"at", at, "caller", caller, "thread", reply)
		p.record(Record{Time: now, Direction: Outbound, Kind: kind, Conversation: w.conv, Thread: reply,
			From: "core", To: caller, Listener: at, PayloadTag: tag, Diagnostics: diags, Profile: prof})
		ev := Event{Kind: EventHuh, Time: now, Conversation: w.conv, Thread: reply, From: "core", To: caller, Listener: at,
			PayloadName: tag, Payload: out, Diagnostics: diagStrings(diags), Profile: prof, Cause: cause, About: n.about}
		switch e := out.(type) {
		case *xmlpipe.Huh:
			ev.Error = e.Error
		case *xmlpipe.SystemError:
			ev.Kind, ev.From = EventSystemError, "system"
		case *xmlpipe.Refusal:
			// as a refusal of the outside party's own message: its answer
			// (refuseHeld)
			ev.Kind, ev.Error = EventReply, e.Summary()
		}
		p.emitToConv(w.conv, ev)
		return true
	}
	return false
}
