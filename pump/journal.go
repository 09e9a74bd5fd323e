package pump

import (
	"context"
	"time"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
)

// Direction says whether a journaled envelope entered or left the pump.
type Direction string

// Directions.
const (
	Inbound  Direction = "inbound"
	Outbound Direction = "outbound"
)

// RecordKind classifies a journal record.
type RecordKind string

// Record kinds.
const (
	RecordMessage     RecordKind = "message"
	RecordHuh         RecordKind = "huh"
	RecordSystemError RecordKind = "system-error"
	RecordDeadLetter  RecordKind = "dead-letter"
	// RecordRefusal is a structured <refusal> sent to the sender of a
	// message the delivery gate refused.
	RecordRefusal RecordKind = "refusal"
	// RecordDecision is a governance decision about a message (a guardian
	// rule's deny or review, a human's approval or denial, a timeout):
	// Envelope describes the decision, Diagnostics say it in words.
	RecordDecision RecordKind = "decision"
)

// Record is one journal entry: a canonical envelope the pump accepted from
// outside (Inbound) or emitted (Outbound), or a failure with its diagnostics.
type Record struct {
	Time         time.Time
	Direction    Direction
	Kind         RecordKind
	Conversation string
	Thread       string
	From, To     string
	Listener     string
	PayloadTag   string
	// Envelope is the canonical envelope (or the clipped raw input of a
	// failure). The Journal may keep the slice after Record returns without
	// copying it (the store commits it later): the pump builds it fresh for
	// each message and never modifies it once handed over, and neither may
	// the Journal nor anything else that shares it (events, context slots).
	Envelope    []byte
	Diagnostics []failure.Diagnostic
	// Profile is the security profile of the thread the record belongs to
	// ("" for the implicit profile: no profiles, or a thread begun without
	// one), as the thread registry names it. The pump fills it in; the
	// journal records it, and the retention of the profile applies to the
	// entry.
	Profile string
}

// recordProfile fills in r.Profile, when unset, with the profile of r's
// thread. Without profiles (the routing snapshot defines none) every
// thread's profile is "", and nothing is looked up.
func (p *Pump) recordProfile(r *Record) {
	if r.Profile != "" || r.Thread == "" {
		return
	}
	if tbl := p.routes.Load(); tbl == nil || !tbl.profiled() {
		return
	}
	r.Profile, _ = p.threads.Profile(r.Thread)
}

// Journal receives records. Record must not block the pump for long (the store
// batches on its own writer goroutine).
type Journal interface {
	Record(Record)
}

// JournalFunc adapts a function to Journal.
type JournalFunc func(Record)

// Record calls f.
func (f JournalFunc) Record(r Record) { f(r) }

// SeqJournal is an optional capability of a Journal: RecordSeq journals r and
// returns the sequence number it will be committed with (0: not journaled).
// The pump uses it to report, through DeliveryJournal, when a journaled
// message has been handled.
type SeqJournal interface {
	RecordSeq(r Record) int64
}

// DeliveryJournal is an optional capability of a Journal: Delivered is called
// once a journaled message (by its seq from SeqJournal) was handled by every
// listener it reached and everything those handlers emitted was journaled.
// Messages never marked are re-delivered after a restart (Pump.Recover).
type DeliveryJournal interface {
	Delivered(seq int64)
}

// DurableJournal is an optional capability of a Journal that commits its
// records later than Record returns (the store's group commit). With it the
// pump acknowledges an external message (InjectWait returns) only once its
// record is committed, and hands every event to outlets and subscribers only
// once everything journaled before the event is committed: nothing a client
// hears of can be lost by a crash.
type DurableJournal interface {
	// Assigned returns the highest seq handed out so far.
	Assigned() int64
	// WaitDurable returns once seq, and every seq before it, is committed;
	// an error when seq's own record could not be committed.
	WaitDurable(ctx context.Context, seq int64) error
}

// GroupJournal is an optional capability of a Journal: RecordGroup journals
// rs as one unit — committed all together or not at all, so a crash never
// leaves part of them — and returns their seqs in order (0 for a record it
// did not journal). The pump journals what the outputs of one handler call
// produce with it, so that recovery after a crash finds either the whole
// turn (the handler is not run again) or none of it (it is run again).
type GroupJournal interface {
	RecordGroup(rs []Record) []int64
}
