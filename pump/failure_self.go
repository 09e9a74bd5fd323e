package pump

import (
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
)

// tellSelfCaller tells the failure of a message l sent itself
// (self-iteration) to the party l was working for: the caller of thread,
// the thread l's handler sent it from, climbing past every level of l's
// own self-iteration. Told to l, the failure would reach only l — whose
// handling that began the work has returned — and its caller would never
// learn that the call failed; told to the caller, it is the failed call a
// callee that fails without self-iterating gives: a <huh> on the caller's
// thread, bound to the caller's message (its ref), or, for a party
// outside the organism, the conversation's <huh> event (an Ask's
// AskError). The threads climbed are spent, as a failed hop's thread is.
// It reports false, telling nothing, when the registry no longer knows
// the levels (the failure then goes to l, as before).
//
// tell also uses it, with thread l's own, for l's failure on the answer of
// a sender that cannot hear of it and whose part is over: the party l was
// working for is told, as when l fails on any other message.
func (p *Pump) tellSelfCaller(l *listener, d *delivery, thread string, huh *xmlpipe.Huh, diags []failure.Diagnostic,
	err error) bool {
	for range maxSelfLevels {
		caller, reply, ref, cerr := p.threads.CallerRef(thread)
		if cerr != nil {
			return false
		}
		p.spend(d.conv, thread)
		if lower(caller) == lower(l.Name) {
			if reply == thread {
				return false
			}
			thread = reply
			continue
		}
		now := p.opts.Clock()
		if to := d.tbl.lookup(caller); to != nil {
			p.record(Record{Time: now, Direction: Outbound, Kind: RecordHuh, Conversation: d.conv, Thread: reply,
				From: "core", To: to.Name, Listener: l.Name, PayloadTag: d.payloadName, Diagnostics: diags,
				Profile: d.prof.nameOf()})
			p.sendErrorNote(d.conv, d.tbl, to, reply, huh, d.depth, ref,
				&errorNote{detail: err.Error(), cause: err, at: l.Name, about: d.about(ref)}, 0)
			return true
		}
		p.record(Record{Time: now, Direction: Outbound, Kind: RecordHuh, Conversation: d.conv, Thread: reply,
			From: "core", To: caller, Listener: l.Name, PayloadTag: d.payloadName, Diagnostics: diags,
			Profile: d.prof.nameOf()})
		p.emitToConv(d.conv, Event{Kind: EventHuh, Time: now, Conversation: d.conv, Thread: reply, From: "core",
			To: caller, Listener: l.Name, PayloadName: d.payloadName, Payload: huh, Error: huh.Error,
			Diagnostics: liveDiagnostics(diags), Profile: d.prof.nameOf(), Cause: err})
		return true
	}
	return false
}

// maxSelfLevels bounds how many levels of a listener's self-iteration
// tellSelfCaller climbs.
const maxSelfLevels = 1 << 10
