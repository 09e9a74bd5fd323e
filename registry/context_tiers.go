package registry

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Tier is where a context segment stands for the agent that reads the
// thread (seed 000 §6.1): in full, as a summary, or out of sight. Every tier
// keeps the segment's slots as they were appended — the tier is what the
// agent is shown, never what is kept (No Silent Data Loss, §6.5).
type Tier string

// The three tiers.
const (
	// TierExpanded: the segment's full content is in the agent's context
	// (RAM). A segment the librarian never curated is expanded.
	TierExpanded Tier = "expanded"
	// TierFolded: a summary stands in for the content, which stays in the
	// slots (swap); the agent reads it again by unfolding the segment.
	TierFolded Tier = "folded"
	// TierEvicted: the segment is not in the agent's context at all (cold
	// storage); its slots are kept and it can still be unfolded.
	TierEvicted Tier = "evicted"
)

// Valid reports whether t is one of the three tiers.
func (t Tier) Valid() bool { return t == TierExpanded || t == TierFolded || t == TierEvicted }

// ErrInvalidSegment is returned for a segment that names no history, slots
// the thread does not hold, or an unknown tier.
var ErrInvalidSegment = errors.New("invalid context segment")

// Segment is the unit of context management (seed 000 §6.2): a span of one
// thread's slots that an agent's librarian shows, folds or evicts as a
// whole — a message, a model's reply, or a model's tool calls with their
// results (which must stay together). The buffer keeps what the librarian
// decided about each segment beside the slots, which never change: folding
// and evicting are metadata plus a summary, and the original bytes are
// always there to unfold (ThreadContext.SegmentSlots).
type Segment struct {
	// ID names the segment to the agent: "s" and its first slot's index
	// (SegmentID), as the folded note shows it and context_unfold takes it.
	ID string
	// ThreadID is the thread whose slots it covers.
	ThreadID string
	// Index is its first slot's index; Slots are every slot it covers,
	// ascending, Index first.
	Index int
	Slots []int
	// ContentType classifies it: message (a message the agent received),
	// reply (the model's text), tool_call (the model's calls and their
	// results), note (a note to the model), or the payload type of a slot
	// no librarian classified.
	ContentType string
	// Tier is where it stands.
	Tier Tier
	// Relevance is its score against the agent's current task, 0 to 1, as
	// of the last curation; Scored is false when it was never scored.
	Relevance float64
	Scored    bool
	// Summary is the fold summary (kept after unfolding, to fold again
	// without summarising again); SummaryBy names what wrote it: a model,
	// or "extractive".
	Summary   string
	SummaryBy string
	// Bytes is the size of its slots' content (Raw) — what unfolding
	// gives back; Tokens estimates what its full content costs the model.
	Bytes  int
	Tokens int
	// Changed is when its tier last changed (zero: never curated).
	Changed time.Time

	// From, PayloadType and Time are those of its first slot (filled in by
	// the buffer's views; not recorded).
	From, PayloadType string
	Time              time.Time
}

// SegmentID is the id of the segment that begins at slot index: "s12".
func SegmentID(index int) string { return "s" + strconv.Itoa(index) }

// ParseSegmentID is the inverse of SegmentID.
func ParseSegmentID(id string) (int, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(id), "s")
	if !ok || rest == "" || len(rest) > 9 || (len(rest) > 1 && rest[0] == '0') {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// SegmentSink is an optional capability of a SlotSink: SegmentPut is told
// about every change of a recorded segment but its relevance alone (a
// relevance is rescored before every model call; it is recorded with the
// next tier change). Segments go when their thread's history goes
// (SlotSink.ThreadDeleted). It is called with the buffer locked and must
// not call back into it.
type SegmentSink interface {
	SegmentPut(s Segment)
}

// segmentTable is one thread's recorded segments, guarded by the buffer's
// lock.
type segmentTable struct {
	byIndex map[int]*Segment // by first slot
	covered map[int]int      // slot index → the first slot of its segment
}

// PutSegments records what a librarian decided about segments of thread:
// each replaces the recorded segment beginning at the same slot, and any
// recorded segment it overlaps. ID is set from Index; Changed is set to the
// buffer's clock when the tier differs from the one recorded (or it is
// new). Every segment must cover slots the thread holds, Index first and
// ascending, and have a valid tier; otherwise nothing changes and the
// error wraps ErrInvalidSegment. It returns the segments as recorded.
func (b *ContextBuffer) PutSegments(thread string, segs []Segment) ([]Segment, error) {
	out, _, _, err := b.PutSegmentsVersion(thread, segs)
	return out, err
}

// PutSegmentsVersion is PutSegments that also returns the thread's
// TiersVersion before and after the put, taken with it: after is before
// plus len(out) exactly when the put replaced no recorded segment but
// those beginning at the segments' own first slots. A reader that kept the
// recorded segments as of before (Recorded) may then apply out to them
// instead of reading them all again.
func (b *ContextBuffer) PutSegmentsVersion(thread string, segs []Segment) (out []Segment, before, after uint64, err error) {
	now := b.cfg.Clock()
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.threads[thread]
	if c == nil {
		return nil, 0, 0, fmt.Errorf("registry: segments of %s: no history: %w", thread, ErrInvalidSegment)
	}
	for i := range segs {
		if err := c.checkSegment(&segs[i]); err != nil {
			return nil, 0, 0, err
		}
	}
	before = c.tiersVersion
	out = make([]Segment, len(segs))
	for i, s := range segs {
		out[i] = b.putSegment(c, s, now)
	}
	return out, before, c.tiersVersion, nil
}

// TiersVersion counts the changes of the thread's recorded segments: it
// is the same exactly while Recorded would return the same.
func (c *ThreadContext) TiersVersion() uint64 {
	c.buf.mu.RLock()
	defer c.buf.mu.RUnlock()
	return c.tiersVersion
}

// SetTier records segment index of thread at tier: a segment never
// recorded is recorded as its one slot (or the segment that covers index,
// if any). A fold keeps the recorded summary unless summary is given (with
// by naming its writer).
func (b *ContextBuffer) SetTier(thread string, index int, tier Tier, summary, by string) (Segment, error) {
	if !tier.Valid() {
		return Segment{}, fmt.Errorf("registry: tier %q: %w", tier, ErrInvalidSegment)
	}
	now := b.cfg.Clock()
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.threads[thread]
	if c == nil {
		return Segment{}, fmt.Errorf("registry: segment %s of %s: no history: %w", SegmentID(index), thread, ErrInvalidSegment)
	}
	s, ok := c.segment(index)
	if !ok {
		return Segment{}, fmt.Errorf("registry: segment %s of %s: no such slot: %w", SegmentID(index), thread, ErrInvalidSegment)
	}
	s.Tier = tier
	if summary != "" {
		s.Summary, s.SummaryBy = summary, by
	}
	return b.putSegment(c, s, now), nil
}

// Fold folds segment index of thread with summary (written by by): the
// agent is shown the summary instead of the content from now on. The slots
// do not change.
func (b *ContextBuffer) Fold(thread string, index int, summary, by string) (Segment, error) {
	return b.SetTier(thread, index, TierFolded, summary, by)
}

// Unfold expands segment index of thread and returns it with its slots:
// the content exactly as it was appended, whatever tier it had.
func (b *ContextBuffer) Unfold(thread string, index int) (Segment, []Slot, error) {
	s, err := b.SetTier(thread, index, TierExpanded, "", "")
	if err != nil {
		return Segment{}, nil, err
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	c := b.threads[thread]
	if c == nil { // deleted meanwhile
		return Segment{}, nil, fmt.Errorf("registry: segment %s of %s: no history: %w", s.ID, thread, ErrInvalidSegment)
	}
	return c.decorate(s), c.slotsOf(s), nil
}

// RestoreSegments adds persisted segments after Restore. A segment whose
// thread has no history, or whose slots the history does not hold, is
// skipped (its slots were deleted before it); it returns how many were.
// The sink is not told.
func (b *ContextBuffer) RestoreSegments(segs []Segment) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	skipped := 0
	for _, s := range segs {
		c := b.threads[s.ThreadID]
		if c == nil || c.checkSegment(&s) != nil {
			skipped++
			continue
		}
		s.ID = SegmentID(s.Index) // the store keeps the index alone
		c.record(s)
	}
	return skipped
}

// putSegment records s on c, tells the sink of a change, and returns s as
// recorded. Callers hold b.mu and checked s.
func (b *ContextBuffer) putSegment(c *ThreadContext, s Segment, now time.Time) Segment {
	s.ID, s.ThreadID = SegmentID(s.Index), c.id
	s.From, s.PayloadType, s.Time = "", "", time.Time{}
	var old *Segment
	if c.tiers != nil {
		old = c.tiers.byIndex[s.Index]
	}
	switch {
	case old == nil || old.Tier != s.Tier:
		s.Changed = now
	default:
		s.Changed = old.Changed
	}
	if s.Summary == "" && old != nil {
		s.Summary, s.SummaryBy = old.Summary, old.SummaryBy
	}
	changed := old == nil || !sameRecord(old, &s)
	c.record(s)
	if sink, ok := b.cfg.Sink.(SegmentSink); ok && changed {
		sink.SegmentPut(s)
	}
	return s
}

// sameRecord reports whether a and b differ in nothing but relevance.
func sameRecord(a, b *Segment) bool {
	return a.Tier == b.Tier && a.Summary == b.Summary && a.SummaryBy == b.SummaryBy && a.ContentType == b.ContentType &&
		a.Bytes == b.Bytes && a.Tokens == b.Tokens && slices.Equal(a.Slots, b.Slots) && a.Changed.Equal(b.Changed)
}

// checkSegment validates s against c's slots and normalises it (Slots
// defaults to [Index]). Callers hold the buffer's lock.
func (c *ThreadContext) checkSegment(s *Segment) error {
	if len(s.Slots) == 0 {
		s.Slots = []int{s.Index}
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("registry: segment %s of %s: %s: %w", SegmentID(s.Index), c.id, fmt.Sprintf(format, a...), ErrInvalidSegment)
	}
	switch {
	case !s.Tier.Valid():
		return bad("tier %q", s.Tier)
	case s.Slots[0] != s.Index:
		return bad("slots %v do not begin at its index", s.Slots)
	case s.Relevance < 0 || s.Relevance > 1 || s.Relevance != s.Relevance:
		return bad("relevance %v out of 0…1", s.Relevance)
	case s.Bytes < 0 || s.Tokens < 0:
		return bad("negative size")
	}
	for i, n := range s.Slots {
		if n < 0 || n >= len(c.slots) {
			return bad("slot %d: the thread holds %d", n, len(c.slots))
		}
		if i > 0 && n <= s.Slots[i-1] {
			return bad("slots %v not ascending", s.Slots)
		}
	}
	return nil
}

// record stores s (checked), replacing whatever it overlaps. Callers hold
// the buffer's lock.
func (c *ThreadContext) record(s Segment) {
	if c.tiers == nil {
		c.tiers = &segmentTable{byIndex: map[int]*Segment{}, covered: map[int]int{}}
	}
	t := c.tiers
	c.tiersVersion++
	for _, n := range s.Slots {
		if first, ok := t.covered[n]; ok && first != s.Index {
			c.forget(first)
		}
	}
	if old := t.byIndex[s.Index]; old != nil {
		for _, n := range old.Slots {
			delete(t.covered, n)
		}
	}
	s.Slots = slices.Clone(s.Slots)
	t.byIndex[s.Index] = &s
	for _, n := range s.Slots {
		t.covered[n] = s.Index
	}
}

// forget drops the recorded segment beginning at first.
func (c *ThreadContext) forget(first int) {
	t := c.tiers
	if old := t.byIndex[first]; old != nil {
		c.tiersVersion++
		for _, n := range old.Slots {
			if t.covered[n] == first {
				delete(t.covered, n)
			}
		}
		delete(t.byIndex, first)
	}
}

// segment returns the recorded segment that covers slot index, or the
// slot's own expanded segment. Callers hold the buffer's lock.
func (c *ThreadContext) segment(index int) (Segment, bool) {
	if index < 0 || index >= len(c.slots) {
		return Segment{}, false
	}
	if c.tiers != nil {
		if first, ok := c.tiers.covered[index]; ok {
			s := *c.tiers.byIndex[first]
			s.Slots = slices.Clone(s.Slots)
			return s, true
		}
	}
	sl := &c.slots[index]
	return Segment{ID: SegmentID(index), ThreadID: c.id, Index: index, Slots: []int{index}, ContentType: sl.PayloadType,
		Tier: TierExpanded, Bytes: len(sl.Raw), Tokens: (len(sl.Raw) + 3) / 4}, true
}

// decorate fills in the first slot's sender, payload type and time.
func (c *ThreadContext) decorate(s Segment) Segment {
	if s.Index >= 0 && s.Index < len(c.slots) {
		sl := &c.slots[s.Index]
		s.From, s.PayloadType, s.Time = sl.From, sl.PayloadType, sl.Time
	}
	return s
}

// slotsOf returns copies of s's slots. Callers hold the buffer's lock.
func (c *ThreadContext) slotsOf(s Segment) []Slot {
	out := make([]Slot, 0, len(s.Slots))
	for _, n := range s.Slots {
		if n >= 0 && n < len(c.slots) {
			out = append(out, c.slots[n])
		}
	}
	return out
}

// Segments returns the thread's context as segments, by first slot: the
// segments a librarian recorded, and every slot none of them covers as an
// expanded segment of its own (content type: its payload type). Together
// they cover every slot once.
func (c *ThreadContext) Segments() []Segment {
	c.buf.mu.RLock()
	defer c.buf.mu.RUnlock()
	out := make([]Segment, 0, len(c.slots))
	for i := 0; i < len(c.slots); i++ {
		if c.tiers != nil {
			if first, ok := c.tiers.covered[i]; ok && first != i {
				continue // inside a segment listed at its first slot
			}
		}
		s, _ := c.segment(i)
		out = append(out, c.decorate(s))
	}
	return out
}

// Segment returns the segment that covers slot index (see Segments).
func (c *ThreadContext) Segment(index int) (Segment, bool) {
	c.buf.mu.RLock()
	defer c.buf.mu.RUnlock()
	s, ok := c.segment(index)
	if !ok {
		return Segment{}, false
	}
	return c.decorate(s), true
}

// SegmentSlots returns the slots of s as they were appended: the original
// content, whatever the segment's tier.
func (c *ThreadContext) SegmentSlots(s Segment) []Slot {
	c.buf.mu.RLock()
	defer c.buf.mu.RUnlock()
	return c.slotsOf(s)
}

// Recorded returns the segments a librarian recorded, by first slot.
func (c *ThreadContext) Recorded() []Segment {
	c.buf.mu.RLock()
	defer c.buf.mu.RUnlock()
	if c.tiers == nil {
		return nil
	}
	idx := make([]int, 0, len(c.tiers.byIndex))
	for i := range c.tiers.byIndex {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	out := make([]Segment, len(idx))
	for k, i := range idx {
		s := c.decorate(*c.tiers.byIndex[i])
		s.Slots = slices.Clone(s.Slots)
		out[k] = s
	}
	return out
}
