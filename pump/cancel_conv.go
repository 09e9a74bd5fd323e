package pump

import (
	"fmt"

	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// A cancel stops the answer in flight of one conversation and keeps the
// conversation: Kill's machinery drops its work (the running handler calls
// cancelled, the queued and held messages dead-lettered and marked
// delivered in the journal, what the cancelled handlers still emit
// dropped), but nothing is recorded as final and no thread is ended by it,
// so the conversation completes as one whose work ran out, and its owner
// continues it as any completed one.

// CancelledReason is the Error of the EventComplete of a conversation whose
// answer Cancel stopped, and the reason of the dead letters of its dropped
// messages: its sender learns that no answer comes, and that it may go on.
const CancelledReason = "answer cancelled"

// Cancel stops the answer in flight of the conversation that thread belongs
// to (the conversation id or any thread of it) and keeps the conversation:
// the context of every handler call of it running now is cancelled with
// cause ErrCancelled, and what such a call returns afterwards is dropped (a
// dead letter, no <huh>); its messages queued, waiting for a handler slot
// or held by the delivery gate are dropped as dead letters
// (CancelledReason) before Cancel returns, marked delivered in the journal
// so that recovery runs none of them again, and so is whatever its handlers
// emit until nothing of it is in flight. Then it completes (EventComplete
// with Error CancelledReason). Unlike Kill, nothing of it ends for good: an
// outside message continuing it — sent while the cancelled work still
// drains, or later — is accepted and runs, as a new turn of it. Outside
// messages that wait for the cancelled turn to complete (held
// continuations) are not cancelled: they run after it.
//
// It returns the conversation id; ErrConversationEnded when the
// conversation has nothing in flight (it completed, or was killed: a
// cancel has nothing to stop), or ErrUnknownThread when the organism does
// not know the thread.
func (p *Pump) Cancel(thread string) (string, error) {
	conv := p.threads.Root(thread)
	if conv == "" {
		var killed bool
		conv, killed = p.endedConversation(thread)
		if r, ok := p.threads.EndedRoot(thread); ok && !killed {
			conv = r
		}
	}
	s := p.convs.lock(conv)
	c := s.m[conv]
	switch {
	case c == nil:
		s.mu.Unlock()
		if p.knownConversation(conv) || p.kills.has(conv) {
			return conv, fmt.Errorf("%w: %s", ErrConversationEnded, conv)
		}
		return "", fmt.Errorf("%w: %s", ErrUnknownThread, thread)
	case c.killed:
		s.mu.Unlock()
		return conv, fmt.Errorf("%w: %s (killed already)", ErrConversationEnded, conv)
	case c.reserved != nil:
		// Kept for a held continuation about to begin its turn: the
		// turn cancelled before it has completed.
		s.mu.Unlock()
		return conv, fmt.Errorf("%w: %s", ErrConversationEnded, conv)
	}
	first := !c.cancelled
	if first {
		c.cancelled = true
		p.killing.Add(1)
	}
	s.mu.Unlock()
	if first {
		p.markCancelled(conv)
	}
	// After the mark, as Kill: a worker starting a call of conv now either
	// sees it (handle) or published its call before this scan.
	cancelled := p.cancelCalls(ErrCancelled, func(hc *handlerCall) bool { return hc.d.conv == conv })
	p.held.await(conv)
	p.dropHeld(conv, ErrCancelled)
	dropped := p.purgeKilled(conv)
	dropped += p.withdrawSlots(conv)
	p.log.Info("answer cancelled", "thread", conv, "cancelled", cancelled, "dropped", dropped)
	return conv, nil
}

// markCancelled records the cancel mark (xmlpipe.CancelMarkType) on every
// live thread of conv that has a history, before any of its work stops: a
// handler that waits for an answer its history records as pending (an
// agent that sent its tool calls and returned) is not running to see the
// cancel, and the answer it waits for is among what the cancel drops. The
// mark tells it so at its next message. It goes before the cancel reaches
// the running handlers, so that what those record of the cancel follows it.
func (p *Pump) markCancelled(conv string) {
	for _, t := range p.threads.Subtree(conv) {
		if !p.context.ThreadExists(t) {
			continue
		}
		if _, err := p.context.Append(registry.Slot{ThreadID: t, PayloadType: xmlpipe.CancelMarkType,
			Raw: []byte(CancelledReason)}); err != nil {
			p.log.Warn("context buffer: the cancel mark was not recorded", "thread", t, "error", err)
		}
	}
}

// stopped reports whether conv's messages in flight are dropped rather
// than handled: Kill stopped it, or Cancel its answer in flight.
func (c *convState) stopped() bool { return c.killed || c.cancelled }

// dropReason is the reason of the dead letters of conv's dropped messages
// (see killed): KilledReason, or CancelledReason when its answer was
// cancelled and it was not killed.
func (p *Pump) dropReason(conv string) string {
	if p.cancelledOnly(conv) {
		return CancelledReason
	}
	return KilledReason
}

// dropCause is the cause that goes with dropReason: ErrConversationKilled,
// or ErrCancelled.
func (p *Pump) dropCause(conv string) error {
	if p.cancelledOnly(conv) {
		return ErrCancelled
	}
	return ErrConversationKilled
}

// cancelledOnly reports whether conv is in flight with its answer
// cancelled and not killed.
func (p *Pump) cancelledOnly(conv string) bool {
	if conv == "" || p.killing.Load() == 0 {
		return false
	}
	s := p.convs.lock(conv)
	defer s.mu.Unlock()
	c := s.m[conv]
	return c != nil && c.cancelled && !c.killed
}
