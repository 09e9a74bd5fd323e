package pump

import (
	"errors"
	"fmt"

	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// diagnosticsOf extracts the detailed findings of an error.
func diagnosticsOf(err error) []failure.Diagnostic {
	var f *failure.Failure
	if errors.As(err, &f) {
		return f.Diagnostics
	}
	return []failure.Diagnostic{{Msg: err.Error()}}
}

// handlerDiagnostics are the diagnostics of a handler's failure err: its
// error, and — when err carries an *xmlpipe.InputError — that error's text
// on its own (failure.StageInput), which its handler wrote for the sender:
// a journal reader not told the handler's error reads it there, as the
// sender's client reads it on the live frames.
func handlerDiagnostics(err error) []failure.Diagnostic {
	diags := []failure.Diagnostic{{Stage: failure.StageHandler, Msg: err.Error()}}
	if ie, ok := errors.AsType[*xmlpipe.InputError](err); ok {
		diags = append(diags, failure.Diagnostic{Stage: failure.StageInput, Msg: ie.Error()})
	}
	return diags
}

// liveDiagnostics are the lines of a handler failure's journaled
// diagnostics (handlerDiagnostics) its live event carries: the handler's
// error only — the event's Cause holds the InputError, which the bus tells
// the sender's client from it.
func liveDiagnostics(ds []failure.Diagnostic) []string {
	out := make([]string, 0, len(ds))
	for _, d := range ds {
		if d.Stage != failure.StageInput {
			out = append(out, d.String())
		}
	}
	return out
}

func diagStrings(ds []failure.Diagnostic) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.String()
	}
	return out
}

// rejectRead handles a message that failed before its envelope was understood.
func (p *Pump) rejectRead(w *work, err error) {
	p.failed.Add(1)
	diags := diagnosticsOf(err)
	if errors.Is(err, failure.ErrPrivileged) {
		p.log.Warn("security event: privileged message on the main bus dropped", "external", w.external,
			"detail", err.Error())
		p.journalIn(w.turn, Record{Direction: Inbound, Kind: RecordDeadLetter, Conversation: w.conv, Envelope: clip(w.raw),
			Diagnostics: diags}, func(int64) {
			p.publish(nil, Event{Kind: EventDeadLetter, Time: p.opts.Clock(), Conversation: w.conv,
				Error: "privileged message dropped", Diagnostics: diagStrings(diags)})
			if w.done != nil {
				w.done("", 0, err)
			}
		})
		return
	}
	thread, from := "", ""
	if w.external {
		// An unreadable message names no thread (nor, to be trusted, a
		// sender): its refusal gets a fresh thread id, which the journal
		// record, the event and the injector's result all carry, so its
		// sender can match the <huh> it is told about to what the journal
		// shows. With a principal, the principal is the sender.
		thread = stage.NewThreadID()
		if w.principal != nil {
			from = w.principal.From
		}
	}
	p.fail(w, thread, from, "", err, diags)
}

// rejectMessage handles a message whose envelope was read but which cannot be
// delivered (bad sender, no route, invalid payload, ended thread).
func (p *Pump) rejectMessage(w *work, m *stage.Inbound, listener string, err error) {
	p.failed.Add(1)
	diags := append(diagnosticsOf(err), m.Diagnostics...)
	if u, ok := unroutedOutput(w, m.PayloadName, err); ok {
		err = u
	}
	p.fail(w, m.Thread, m.From, listener, err, diags)
}

// fail sends the <huh> for a failed message to its sender: the external outlet,
// or the listener whose output it was (unless it was itself an error message,
// or the output of a plain listener's error handler, which becomes a dead
// letter — errors about errors never loop).
func (p *Pump) fail(w *work, thread, from, listener string, err error, diags []failure.Diagnostic) {
	huh := stage.NewHuh(err, w.raw)
	u, unrouted := errors.AsType[*UnroutedError](err)
	if !unrouted { // tellUnrouted logs it, in the reference's words
		p.log.Info("message rejected", "thread", thread, "from", from, "listener", listener, "error", err)
	}
	now := p.opts.Clock()
	switch {
	case w.external:
		p.journalIn(w.turn, Record{Time: now, Direction: Inbound, Kind: RecordHuh, Conversation: p.refusedConversation(thread, err),
			Thread: thread, From: from, Listener: listener,
			Envelope: clip(w.raw), Diagnostics: diags, Profile: p.workProfile(w, thread)}, func(int64) {
			p.publish(w.outlet, Event{Kind: EventHuh, Time: now, Thread: thread, From: "core", To: from, Error: huh.Error,
				Payload: huh, Diagnostics: diagStrings(diags), Cause: err})
		})
	case w.isError || w.sender == nil:
		p.deadLetterErr(w.turn, w.conv, thread, from, listener, "", clip(w.raw), err.Error(), err)
	case w.errOutput && w.answers == nil:
		// A refused reply of an error handler is told about its delivery
		// (tellFailure), which dead-letters it; any other refused output
		// is dead-lettered here.
		if w.prune == "" {
			p.spend(w.conv, thread)
		}
		p.deadLetterErr(w.turn, w.conv, thread, w.sender.Name, listener, "", clip(w.raw),
			errOutputRefused(w.sender, w.errRound, err), err)
	default:
		if w.prune == "" {
			// The thread the sender opened for the refused message: no
			// handler saw it, nothing arrives on it, it ends with the
			// conversation (a refused reply travels on its caller's).
			p.spend(w.conv, thread)
		}
		p.journalIn(w.turn, Record{Time: now, Direction: Outbound, Kind: RecordHuh, Conversation: w.conv, Thread: thread,
			From: w.sender.Name, Listener: listener, Envelope: clip(w.raw), Diagnostics: diags,
			Profile: p.workProfile(w, thread)}, func(int64) {
			if unrouted {
				// Output of a listener that cannot hear of it, which no
				// listener takes: its caller learns that no answer comes.
				p.tellUnrouted(w.sender, w.answers, u)
				return
			}
			if w.answers != nil {
				// A refused reply or message of a listener that cannot
				// hear of it: its caller learns that no answer comes, and
				// why.
				p.tellFailure(w.sender, w.answers, fmt.Errorf("%w: %s: its answer was refused: %w",
					failure.ErrHandler, w.sender.Name, err))
				return
			}
			p.sendErrorRound(w.conv, w.tbl, w.sender, w.origThread(thread), huh, w.depth, w.ref, w.about, errorDetail(diags),
				err, w.errRound)
		})
	}
	if w.done != nil {
		p.later(w.turn, func() { w.done(thread, 0, err) })
	}
}

// refusedConversation returns the conversation of an outside message
// refused on thread: a live thread's, or the killed conversation's the
// message tried to continue; "" for a thread of none (one its sender
// chose, which no conversation began under).
func (p *Pump) refusedConversation(thread string, err error) string {
	if thread == "" {
		return ""
	}
	if conv := p.threads.Root(thread); conv != "" {
		return conv
	}
	if errors.Is(err, ErrContinueKilled) {
		conv, _ := p.endedConversation(thread)
		return conv
	}
	return ""
}

// origThread is the thread a failed internal message's sender was on: the
// thread the sender's handler ran on, carried with the work.
func (w *work) origThread(fallback string) string {
	if w.senderThread != "" {
		return w.senderThread
	}
	return fallback
}

// sendErrorAbout queues a pump-generated <huh> or SystemError to a listener
// of conversation conv, which routes within tbl, about a message the
// listener sent with correlation ref ref (the envelope carries it:
// correlation.go; "" for none); detail is the pump's reason, what the
// listener's error handler (xmlpipe.DeliveryError.Detail) and an Ask
// (AskError) learn beyond the canned text, and cause the error behind it
// (Event.Cause; nil for none); about tells the failure apart from the
// others of its turn (Event.About).
func (p *Pump) sendErrorAbout(conv string, tbl *table, to *listener, thread string, payload any, depth int,
	ref, about, detail string, cause error) {
	p.sendErrorRound(conv, tbl, to, thread, payload, depth, ref, about, detail, cause, 0)
}

// sendErrorRound is sendErrorAbout for a failure about output of to's error
// handler, round being that output's errRound (work.errRound), which the
// error's delivery carries (delivery.errRound) to bound how often in a row
// the error handler hears of its own refused output.
func (p *Pump) sendErrorRound(conv string, tbl *table, to *listener, thread string, payload any, depth int,
	ref, about, detail string, cause error, round int) {
	p.sendErrorNote(conv, tbl, to, thread, payload, depth, ref, &errorNote{detail: detail, cause: cause, about: about}, round)
}

// sendErrorNote is sendErrorRound with what the error says beyond its
// payload in n (its at names the callee of to that failed, if any).
func (p *Pump) sendErrorNote(conv string, tbl *table, to *listener, thread string, payload any, depth int, ref string,
	n *errorNote, round int) {
	pt := p.core.Huh
	from := "core"
	kind := EventHuh
	switch payload.(type) {
	case *xmlpipe.SystemError:
		pt, from, kind = p.core.SystemError, "system", EventSystemError
	case *xmlpipe.Refusal: // a refusal relayed to the caller of a listener that could not hear it
		pt, kind = p.core.Refusal, EventRefusal
	}
	body, err := pt.AppendPayload(nil, payload)
	if err != nil {
		p.deadLetter(conv, thread, from, to.Name, pt.Name(), nil, err.Error())
		return
	}
	env := stage.AppendEnvelopeInReplyTo(nil, from, to.Name, thread, ref, body)
	ev := Event{Kind: kind, Time: p.opts.Clock(), Conversation: conv, Thread: thread, From: from, To: to.Name,
		PayloadName: pt.Name(), Payload: payload, About: n.about, Cause: n.cause}
	switch e := payload.(type) {
	case *xmlpipe.Huh:
		ev.Error = e.Error
	case *xmlpipe.Refusal:
		ev.Error = e.Summary()
	}
	if to.errHandler == nil {
		// to cannot hear it: its caller is told in its stead (relayError),
		// and this event is told only should nobody be (tellHeld) — one
		// failure, one event for the party that hears it.
		n.held = &ev
	} else {
		p.tellEvent(ev, n.detail)
	}
	p.enqueueInternal(&work{raw: env, conv: conv, tbl: tbl, isError: true, depth: depth, payloadType: pt, note: n,
		errRound: round})
}

// deadLetter records a message that could not be delivered anywhere.
func (p *Pump) deadLetter(conv, thread, from, to, tag string, env []byte, reason string) {
	p.deadLetterIn(nil, conv, thread, from, to, tag, env, reason)
}

// workProfile is the profile of the thread work w travels on, as the
// journal records it with a failure about it: the one its emitter knew,
// else the live thread's, else (external work on a thread not begun) the
// one it was sent under.
func (p *Pump) workProfile(w *work, thread string) string {
	if w.profSet {
		return w.prof.nameOf()
	}
	if prof, live := p.threads.Profile(thread); live {
		return prof
	}
	if w.external {
		return registry.NarrowProfile("", w.profile)
	}
	return ""
}

// deadLetterIn is deadLetter journaled with turn t (see journalIn).
func (p *Pump) deadLetterIn(t *turn, conv, thread, from, to, tag string, env []byte, reason string) {
	p.deadLetterErr(t, conv, thread, from, to, tag, env, reason, nil)
}

// deadLetterErr is deadLetterIn with the error behind it (Event.Cause,
// which an Ask's *AskError unwraps to; nil for none).
func (p *Pump) deadLetterErr(t *turn, conv, thread, from, to, tag string, env []byte, reason string, cause error) {
	p.log.Warn("dead letter", "thread", thread, "from", from, "to", to, "payload", tag, "reason", reason)
	p.journalIn(t, Record{Direction: Outbound, Kind: RecordDeadLetter, Conversation: conv, Thread: thread, From: from, To: to,
		PayloadTag: tag, Envelope: env, Diagnostics: []failure.Diagnostic{{Msg: reason}}}, func(int64) {
		p.publish(nil, Event{Kind: EventDeadLetter, Time: p.opts.Clock(), Conversation: conv, Thread: thread, From: from,
			To: to, PayloadName: tag, Envelope: env, Error: reason, Cause: cause})
	})
}

// clip bounds the bytes of a failed message kept in journal records.
func clip(b []byte) []byte {
	const max = 64 << 10
	if len(b) > max {
		b = b[:max]
	}
	return append([]byte(nil), b...)
}

func (p *Pump) record(r Record) {
	if p.journal == nil {
		return
	}
	p.recordProfile(&r)
	if r.Time.IsZero() {
		r.Time = p.opts.Clock()
	}
	p.journal.Record(r)
}
