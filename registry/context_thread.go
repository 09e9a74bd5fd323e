package registry

import (
	"container/list"
	"iter"
	"reflect"
	"slices"
	"time"
)

// Slot is one message in a thread's history: one record per hop, holding both
// sides (From and To) — never a separate outgoing and incoming copy.
type Slot struct {
	// Index is the slot's position in its thread, assigned on append.
	Index int
	// ThreadID is the thread the message travelled on.
	ThreadID string
	// From is the sender, To the receiver.
	From, To string
	// PayloadType is the payload's root tag; when empty on append it is the
	// payload's Go type name.
	PayloadType string
	// Payload is the decoded payload, kept by reference (nil after Restore).
	Payload any
	// Raw is the canonical payload XML. Append keeps its own copy,
	// AppendShared the caller's bytes; the bytes handed out must not be
	// modified.
	Raw []byte
	// Time is when the slot was recorded (the buffer's clock when zero).
	Time time.Time
	// OwnName is the receiving agent's own name (agents only).
	OwnName string
	// IsSelfCall reports whether the receiver sent the message to itself.
	IsSelfCall bool
	// UsageInstructions is the peer-schema prompt text the receiver got.
	UsageInstructions string
	// TodoNudge is the todo system note the receiver got.
	TodoNudge string
	// InReplyTo is the correlation ref the receiver got with the message
	// (xmlpipe.Metadata.InReplyTo): the message answers the receiver's own
	// message sent with that ref. "" for any other message.
	InReplyTo string
	// Seq is the journal seq of the message whose handling recorded the
	// slot (xmlpipe.MessageSeq): the message's own for the slot the pump
	// records before its handler runs, the handled message's for a slot a
	// handler records. It tells apart two messages alike in everything
	// else, and the handling a step belongs to, across a restart. 0 when
	// the message was not journaled.
	Seq int64
}

// ThreadContext is one thread's append-only history. Slots are values: what
// a reader gets cannot change the history. A ThreadContext that has been
// deleted or evicted keeps the slots it had; appends go through
// ContextBuffer.Append.
type ThreadContext struct {
	buf     *ContextBuffer
	id      string
	created time.Time
	touched time.Time // guarded by buf.mu
	slots   []Slot    // guarded by buf.mu
	// prev and next link the histories in buf's creation order (oldest
	// first), guarded by buf.mu: a list without an element to allocate.
	prev, next *ThreadContext
	// first holds the first slot: most threads (one per hop) keep one,
	// which then costs no allocation of its own. Slots are handed out
	// as copies, so appending past it only moves the history.
	first [1]Slot
	// keptElem is the position in buf.kept while the history outlives its
	// thread (nil otherwise), guarded by buf.mu.
	keptElem *list.Element
	// tiers are the librarian's segments (context_tiers.go), guarded by
	// buf.mu; nil until one is recorded.
	tiers *segmentTable
	// tiersVersion counts the changes of tiers (TiersVersion), guarded by
	// buf.mu.
	tiersVersion uint64
	// expiry, when set, says an earlier history of the thread was removed
	// (by Collect or an eviction) before this one began
	// (context_expired.go), guarded by buf.mu.
	expiry *Expiry
}

// ID returns the thread id.
func (c *ThreadContext) ID() string { return c.id }

// Created returns when the thread's history was created.
func (c *ThreadContext) Created() time.Time { return c.created }

// Len returns the number of slots.
func (c *ThreadContext) Len() int {
	c.buf.mu.RLock()
	defer c.buf.mu.RUnlock()
	return len(c.slots)
}

// At returns slot i; a negative i counts from the end (-1 is the last slot).
func (c *ThreadContext) At(i int) (Slot, bool) {
	c.buf.mu.RLock()
	defer c.buf.mu.RUnlock()
	if i < 0 {
		i += len(c.slots)
	}
	if i < 0 || i >= len(c.slots) {
		return Slot{}, false
	}
	return c.slots[i], true
}

// Slice returns a copy of slots[start:end] with Python slice semantics:
// negative bounds count from the end and bounds are clamped, so
// Slice(0, math.MaxInt) is everything and Slice(-2, math.MaxInt) the last two.
func (c *ThreadContext) Slice(start, end int) []Slot {
	c.buf.mu.RLock()
	defer c.buf.mu.RUnlock()
	n := len(c.slots)
	clamp := func(i int) int {
		if i < 0 {
			i += n
		}
		return min(max(i, 0), n)
	}
	start, end = clamp(start), clamp(end)
	if start >= end {
		return nil
	}
	return slices.Clone(c.slots[start:end])
}

// ByType returns the slots whose PayloadType is exactly typeName.
func (c *ThreadContext) ByType(typeName string) []Slot {
	return c.filter(func(s *Slot) bool { return s.PayloadType == typeName })
}

// From returns the slots sent by from.
func (c *ThreadContext) From(from string) []Slot {
	return c.filter(func(s *Slot) bool { return s.From == from })
}

// Slots returns a snapshot copy of every slot.
func (c *ThreadContext) Slots() []Slot {
	c.buf.mu.RLock()
	defer c.buf.mu.RUnlock()
	return slices.Clone(c.slots)
}

// All iterates over a snapshot taken when iteration starts; appends made
// during the iteration are not seen.
func (c *ThreadContext) All() iter.Seq[Slot] {
	return func(yield func(Slot) bool) {
		for _, s := range c.Slots() {
			if !yield(s) {
				return
			}
		}
	}
}

// filter returns copies of the slots keep accepts.
func (c *ThreadContext) filter(keep func(*Slot) bool) []Slot {
	c.buf.mu.RLock()
	defer c.buf.mu.RUnlock()
	var out []Slot
	for i := range c.slots {
		if keep(&c.slots[i]) {
			out = append(out, c.slots[i])
		}
	}
	return out
}

// payloadTypeName is the Go type name of p, pointers dereferenced ("" for nil).
func payloadTypeName(p any) string {
	if p == nil {
		return ""
	}
	t := reflect.TypeOf(p)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}
