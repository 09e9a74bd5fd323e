package pump

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// ErrRecoverEnded reports that a recovered message's thread has ended since it
// was journaled: its handling had finished, so it is not delivered again
// (Recover marks it delivered).
var ErrRecoverEnded = errors.New("pump: recovered message's thread has ended")

// Recovered is a journaled message that reached a listener and was never
// marked delivered (see DeliveryJournal), to be handed to Pump.Recover.
type Recovered struct {
	// Seq is the message's journal seq; the delivery mark goes to it.
	Seq int64
	// Envelope is the canonical envelope as journaled.
	Envelope []byte
	// External marks a message that came from outside the organism (journaled
	// Inbound); it re-enters as Inject does. Otherwise it is a listener's
	// output and re-enters on its conversation.
	External bool
	// Conversation and Thread are as journaled.
	Conversation, Thread string
	// Turn is the journal seq of the outside message that began the turn
	// of the conversation this (internal) message belongs to (0: unknown):
	// the conversation's events keep the Event.Turn they had before the
	// restart, so their frame ids do too. An external message's turn is
	// its own Seq.
	Turn int64
	// Journaled is when the message was journaled (zero: unknown). A
	// thread history that holds the message already — recorded as it was
	// delivered before the crash: a slot with Seq as its registry.Slot.Seq,
	// or, for a slot recorded without a seq, with its bytes at or after
	// this time — does not get it a second time: an agent would see its
	// caller's message twice.
	Journaled time.Time
}

// Recover re-delivers a journaled message after a restart, once the thread
// registry has been restored. The contract is at-least-once: a message whose
// handler ran but whose delivery mark was not committed before a crash is
// handled again, so handlers that must not repeat side effects deduplicate on
// their own. The message passes every ingress stage again but is not journaled
// a second time; its delivery mark goes to r.Seq. An internal message whose
// thread has ended is not delivered (ErrRecoverEnded, and it is marked
// delivered). Replies of recovered external conversations go to the
// subscribers only (the original connection is gone). Like Inject, it waits
// while the admission budget (MaxInFlight) is used up — as long as ctx
// allows, never failing with ErrBusy — so a backlog re-enters a bounded
// amount at a time.
func (p *Pump) Recover(ctx context.Context, r Recovered) error {
	if !p.started.Load() {
		return ErrNotStarted
	}
	if r.Seq <= 0 || len(r.Envelope) == 0 {
		return fmt.Errorf("pump: recover: seq %d with %d bytes: nothing to recover", r.Seq, len(r.Envelope))
	}
	if r.External {
		if err := p.admit(ctx, time.Time{}, ""); err != nil {
			return err
		}
		w := &work{raw: r.Envelope, external: true, admitted: p.opts.Clock(), recovered: r.Seq, journaled: r.Journaled}
		if !p.work.push(w) {
			p.releaseWork(w)
			return ErrClosed
		}
		return nil
	}
	if r.Thread == "" || !p.threads.Known(r.Thread) {
		p.newDeliveryMark(r.Seq, 1).release()
		return fmt.Errorf("%w: thread %q (seq %d)", ErrRecoverEnded, r.Thread, r.Seq)
	}
	if err := p.admit(ctx, time.Time{}, ""); err != nil { // a backlog re-enters under the same bound as new messages
		return err
	}
	tbl := p.convStart(r.Conversation, nil, p.pinRoutes())
	// Its spent threads, restored with their marks, end when it completes
	// (before the restart its forwards told it they were there).
	p.convHoldSpending(r.Conversation, true)
	if r.Turn > 0 {
		p.convTurn(r.Conversation, r.Turn)
	}
	p.queueInternal(&work{raw: r.Envelope, conv: r.Conversation, tbl: tbl, admitted: p.opts.Clock(), recovered: r.Seq,
		journaled: r.Journaled})
	return nil
}

// deliveryMark counts what still has to finish before a journaled message
// counts as delivered: one reference per listener it reached, plus one per
// message those handlers emitted until that message is journaled. A nil mark
// (nothing journaled, or a journal without DeliveryJournal) does nothing.
type deliveryMark struct {
	seq int64
	// recovered marks a message re-delivered by Recover (MessageSeq).
	recovered bool
	refs      atomic.Int32
	to        DeliveryJournal
}

// newDeliveryMark returns a mark for seq holding refs references, or nil when
// the message was not journaled or the journal does not take delivery marks.
func (p *Pump) newDeliveryMark(seq int64, refs int) *deliveryMark {
	if seq <= 0 || refs <= 0 {
		return nil
	}
	dj, ok := p.journal.(DeliveryJournal)
	if !ok {
		return nil
	}
	m := &deliveryMark{seq: seq, to: dj}
	m.refs.Store(int32(refs))
	return m
}

// messageSeq is the journal seq m marks (0: nil, the message was not
// journaled or the journal takes no delivery marks).
func (m *deliveryMark) messageSeq() int64 {
	if m == nil {
		return 0
	}
	return m.seq
}

// retain adds a reference (a message emitted while handling) and returns m.
func (m *deliveryMark) retain() *deliveryMark {
	if m != nil {
		m.refs.Add(1)
	}
	return m
}

// release drops a reference; the last one reports the delivery.
func (m *deliveryMark) release() {
	if m == nil {
		return
	}
	if m.refs.Add(-1) == 0 {
		m.to.Delivered(m.seq)
	}
}

// recordSeq journals r like record and returns its seq when the journal
// assigns one (SeqJournal), else 0.
func (p *Pump) recordSeq(r Record) int64 {
	sj, ok := p.journal.(SeqJournal)
	if !ok {
		p.record(r)
		return 0
	}
	if r.Time.IsZero() {
		r.Time = p.opts.Clock()
	}
	p.recordProfile(&r)
	return sj.RecordSeq(r)
}
