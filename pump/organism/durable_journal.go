package organism

import (
	"context"
	"html"
	"log/slog"
	"strings"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// storeJournal adapts the store to pump.Journal, pump.SeqJournal,
// pump.GroupJournal, pump.DeliveryJournal, pump.DurableJournal and
// pump.Storage.
type storeJournal struct {
	s   *store.Store
	log *slog.Logger
	// calls, when set, links LLM calls to the envelopes their agents emit.
	calls *callBook
}

// Record journals r, dropping the seq.
func (j storeJournal) Record(r pump.Record) { j.RecordSeq(r) }

// RecordSeq journals r and returns its seq (0 when the store refused it).
func (j storeJournal) RecordSeq(r pump.Record) int64 {
	seq, err := j.s.AppendSeq(entryOf(r))
	if err != nil {
		j.log.Error("journal: record", "kind", r.Kind, "thread", r.Thread, "from", r.From, "to", r.To, "error", err)
		return 0
	}
	j.emitted(r, seq)
	return seq
}

// emitted tells the call book of a message a listener emitted (journaled
// as seq), which may be the envelope an LLM call produced.
func (j storeJournal) emitted(r pump.Record, seq int64) {
	if j.calls != nil && r.Direction == pump.Outbound && r.Kind == pump.RecordMessage {
		j.calls.journaled(r.From, r.Conversation, seq)
	}
}

// RecordGroup journals rs in one store transaction (store.AppendGroup) and
// returns their seqs. A record the store would refuse (it lacks a required
// field) is logged and left out, as RecordSeq does, so it cannot cost the
// others their place in the journal.
func (j storeJournal) RecordGroup(rs []pump.Record) []int64 {
	seqs := make([]int64, len(rs))
	entries := make([]store.Entry, 0, len(rs))
	at := make([]int, 0, len(rs))
	for i, r := range rs {
		e := entryOf(r)
		probe := e
		if probe.Time.IsZero() {
			probe.Time = time.Now() // the store stamps it
		}
		if err := probe.Validate(); err != nil {
			j.log.Error("journal: record", "kind", r.Kind, "thread", r.Thread, "from", r.From, "to", r.To, "error", err)
			continue
		}
		entries = append(entries, e)
		at = append(at, i)
	}
	first, err := j.s.AppendGroup(entries)
	if err != nil {
		j.log.Error("journal: record group", "records", len(entries), "error", err)
		return seqs
	}
	for k, i := range at {
		seqs[i] = first + int64(k)
		j.emitted(rs[i], seqs[i])
	}
	return seqs
}

// Delivered marks seq delivered.
func (j storeJournal) Delivered(seq int64) {
	if err := j.s.MarkDelivered(seq); err != nil {
		j.log.Error("journal: mark delivered", "seq", seq, "error", err)
	}
}

// Assigned returns the store's highest assigned seq.
func (j storeJournal) Assigned() int64 { return j.s.Assigned() }

// WaitDurable waits for the store to commit seq.
func (j storeJournal) WaitDurable(ctx context.Context, seq int64) error {
	return j.s.WaitDurable(ctx, seq)
}

// Failing implements pump.Storage: why the store's commits fail now (nil
// while they succeed), a lock-free read.
func (j storeJournal) Failing() error { return j.s.Failing() }

// unknownField fills a required journal field the pump could not know (a
// failure before the envelope was understood has no thread or sender).
const unknownField = "-"

// entryOf converts a pump record to a journal entry. The envelope bytes are
// handed to the store without a copy: the pump never modifies them once
// recorded (pump.Record.Envelope). A record without envelope bytes (a
// handler failure, a dead letter produced inside the pump) is journaled as
// a small <record> document holding its kind, parties and diagnostics,
// since every journal row carries bytes.
func entryOf(r pump.Record) store.Entry {
	e := store.Entry{
		Time:         r.Time,
		Thread:       r.Thread,
		Conversation: r.Conversation,
		Direction:    directionOf(r.Direction),
		Kind:         kindOf(r.Kind),
		From:         r.From,
		To:           r.To,
		Listener:     r.Listener,
		PayloadTag:   r.PayloadTag,
		Bytes:        r.Envelope,
		Profile:      r.Profile,
	}
	var diags []string
	for _, d := range r.Diagnostics {
		diags = append(diags, d.String())
	}
	e.Diagnostics = strings.Join(diags, "\n")
	if e.Kind != store.DeadLetter {
		if e.Thread == "" {
			e.Thread = unknownField
		}
		if e.From == "" {
			e.From = unknownField
		}
	}
	if len(e.Bytes) == 0 {
		e.Bytes = synthesize(r, diags)
	}
	return e
}

// synthesize builds the stand-in document of a record without bytes.
func synthesize(r pump.Record, diags []string) []byte {
	var b strings.Builder
	b.WriteString(`<record kind="` + html.EscapeString(string(r.Kind)) + `" from="` + html.EscapeString(r.From) +
		`" to="` + html.EscapeString(r.To) + `" listener="` + html.EscapeString(r.Listener) +
		`" payload="` + html.EscapeString(r.PayloadTag) + `">`)
	for _, d := range diags {
		b.WriteString("<diagnostic>" + html.EscapeString(d) + "</diagnostic>")
	}
	b.WriteString("</record>")
	return []byte(b.String())
}

func directionOf(d pump.Direction) store.Direction {
	if d == pump.Inbound {
		return store.Inbound
	}
	return store.Outbound
}

func kindOf(k pump.RecordKind) store.Kind {
	switch k {
	case pump.RecordHuh:
		return store.Huh
	case pump.RecordSystemError:
		return store.SystemError
	case pump.RecordDeadLetter:
		return store.DeadLetter
	case pump.RecordRefusal:
		return store.Refusal
	case pump.RecordDecision:
		return store.Decision
	default:
		return store.Message
	}
}

// StoreJournal returns the pump journal that writes to s (with delivery marks).
func StoreJournal(s *store.Store, log *slog.Logger) pump.Journal {
	if log == nil {
		log = slog.Default()
	}
	return storeJournal{s: s, log: log}
}
