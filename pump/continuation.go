package pump

import "github.com/xml-pipeline/xmlpipe/registry"

// Conversations continue: an outside party that names the thread id of one
// of its conversations (the id its first message travelled on, which every
// reply to it carries) sends its new message on that same thread, live or
// ended. The registry begins the thread again under the old id when it has
// ended (Threads.Join), so a listener finds the history the context buffer
// holds for it. For the history to be there after the conversation
// completed, the buffer keeps the history of a conversation an outside
// party began with an agent (keptConversation) when its thread ends, until
// the context TTL collects it or MaxThreads evicts it (kept histories
// first); a durable organism persists and restores it with the rest.
// Every other ended thread's history is freed at once, as before.

// keptConversation reports whether the history whose first slot is first
// outlives its thread: the slot is a message from outside the organism
// (neither a listener nor the organism itself) to an agent (OwnName), i.e.
// the first message of a conversation a client began with an agent.
func (p *Pump) keptConversation(first registry.Slot) bool {
	if first.OwnName == "" || first.IsSelfCall || first.From == "" {
		return false
	}
	return !reserved[lower(first.From)] && p.routes.Load().lookup(first.From) == nil
}

// keptOrigin is the sender that began the conversation of a thread that is
// no longer live but whose history was kept: the sender of its first slot
// ("", false when the buffer holds no history for it). The pump asks it
// when the journal cannot say (an in-memory organism, a pruned journal), so
// a kept history is never continued by another party.
func (p *Pump) keptOrigin(thread string) (string, bool) {
	tc, ok := p.context.Thread(thread)
	if !ok {
		return "", false
	}
	first, ok := tc.At(0)
	if !ok {
		return "", false
	}
	return first.From, true
}

// CheckThread reports whether who may send on thread, exactly as InjectAs
// will decide for a message naming it: nil for a thread of a conversation
// who owns — live, an inner thread that ended in a conversation still
// running (that conversation's), or ended and known to the journal or by
// its kept history — and for a thread id the organism never used (a new
// conversation); an error wrapping ErrForeignThread otherwise. A transport
// asks before routing the events of a conversation to a client; it still
// injects a refused message, so that the refusal is logged and journaled
// as a security event.
func (p *Pump) CheckThread(who Principal, thread string) error {
	return p.checkThread(who, thread)
}
