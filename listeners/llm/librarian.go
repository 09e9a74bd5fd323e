package llm

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/xml-pipeline/xmlpipe/registry"
)

// librarianAgent attributes the librarian's model calls (Request.Agent):
// they count against the thread's token budget, not an agent's.
const librarianAgent = "librarian"

// Librarian defaults for the fields whose zero value means "the default".
const (
	// DefaultSummaryWords bounds a fold summary.
	DefaultSummaryWords = 60
	// DefaultMaxSummaries bounds the model summaries one curation asks
	// for; the other folded segments keep an extractive one until a later
	// curation gets to them.
	DefaultMaxSummaries = 2
	// DefaultSummaryTimeout bounds one model summary.
	DefaultSummaryTimeout = 30 * time.Second
)

// Librarian curates an agent's context before every model call (seed 000
// §6.3). It is not an agent (One Thinker, §11.6): it holds no
// conversation and calls no tool; at most it asks a cheaper model for a
// summary. The conversation is segments (segments.go) — each received
// message, reply and note, and each assistant message with tool calls
// together with its results — and the librarian decides each one's tier:
//
//   - It scores every segment's relevance to the current task (TF-IDF
//     cosine with the message that opened the turn and the latest
//     segment, 0 to 1).
//   - It folds a segment whose relevance is below FoldBelow: a note with
//     the segment's id and a summary stands in for it — written by Model
//     when one is set, else extractively (first sentence, key lines).
//     The current turn, the KeepRecent segments before it, segments the
//     model unfolded in this turn, and segments smaller than MinFoldTokens
//     are never folded for relevance.
//   - It unfolds a folded segment whose relevance reaches UnfoldAbove
//     (above FoldBelow: a segment does not flap between tiers).
//   - When the request would still exceed the context budget (the context
//     window less the completion's reserve, the system messages and the
//     tools), it folds more, least relevant first, then evicts the oldest
//     segments, leaving a note that lists them — the budget trimming the
//     loop does without a librarian, done without losing sight of what was
//     trimmed. The latest segment always stays.
//
// Nothing is lost (No Silent Data Loss, §6.5): tiers are recorded beside the
// thread's slots (registry.Segment), which never change, and the model
// reads any folded or evicted segment in full with the context_unfold
// function, offered with the agent's tools — in XML mode, which has no
// functions, with the <ContextUnfold> element (unfold_xml.go). Every tool
// calling mode is curated the same way.
type Librarian struct {
	// Model writes fold summaries (a cheaper model than the agent's,
	// served by LLM); "" summarises extractively.
	Model string
	// LLM serves Model (usually the organism's Router).
	LLM Chatter
	// FoldBelow: a segment less relevant than this is folded (0: none is
	// folded for relevance — only for the budget).
	FoldBelow float64
	// UnfoldAbove: a folded segment at least this relevant is shown in
	// full again (below FoldBelow it counts as FoldBelow).
	UnfoldAbove float64
	// KeepRecent is how many segments before the current turn are never
	// folded for relevance.
	KeepRecent int
	// MinFoldTokens: smaller segments are never folded for relevance.
	MinFoldTokens int
	// SummaryWords bounds a fold summary (0: DefaultSummaryWords).
	SummaryWords int
	// MaxSummaries bounds the model summaries of one curation (0:
	// DefaultMaxSummaries).
	MaxSummaries int
	// SummaryTimeout bounds one model summary (0: DefaultSummaryTimeout).
	SummaryTimeout time.Duration
	// Logger receives the curations (debug) and failed summaries (default
	// slog.Default()).
	Logger *slog.Logger

	lex lexicon
}

func (l *Librarian) summaryWords() int { return cmpOr(l.SummaryWords, DefaultSummaryWords) }
func (l *Librarian) summaryBytes() int { return l.summaryWords() * 8 }
func (l *Librarian) maxSummaries() int { return cmpOr(l.MaxSummaries, DefaultMaxSummaries) }
func (l *Librarian) summaryTimeout() time.Duration {
	return cmpDur(l.SummaryTimeout, DefaultSummaryTimeout)
}

func (l *Librarian) logger() *slog.Logger {
	if l.Logger != nil {
		return l.Logger
	}
	return slog.Default()
}

// localTools are the functions the loop answers itself: LocalTools, loop
// control's (locals), and context_unfold when a librarian curates the
// context.
func (a *Agent) localTools() []LocalTool {
	base := a.locals()
	if a.Librarian == nil || slices.ContainsFunc(base, func(t LocalTool) bool { return t.Spec.Name == unfoldTool }) {
		return base
	}
	return append(slices.Clip(base), a.unfoldLocal())
}

// curation is one curation's working state.
type curation struct {
	l     *Librarian
	segs  []*segment
	prior map[int]registry.Segment
	// open is the segment that opened the current turn, last the latest.
	open, last int
	// class orders what gives way to the budget first: 0 old, 1 recent or
	// unfolded in this turn, 2 the current turn.
	class     []int
	scores    []float64
	tiers     []registry.Tier
	summaries []string
	by        []string
	// noteTokens caches each folded note's cost (0: not known yet); costs
	// are the segments' costs at their tiers and sum their sum; evicted is
	// how many segments, from the first, are evicted (always a prefix).
	noteTokens []int
	costs      []int
	sum        int
	evicted    int
	budget     int
	// evictedCost caches the eviction note's cost for evictedFor evicted
	// segments.
	evictedCost, evictedFor int
	// how is how the model unfolds in its tool calling mode.
	how unfoldSyntax
}

// curate builds the request's messages — sys, the curated conversation,
// tail — and records the segments' tiers (see Librarian).
func (a *Agent) curate(ctx context.Context, st *turnState, sys, tail []Message, tools []ToolSpec, output *OutputSchema) []Message {
	l := a.Librarian
	segs := a.segments(st.c)
	if len(segs) == 0 {
		return append(slices.Clip(sys), tail...)
	}
	window := a.contextWindow(st.traits)
	cu := &curation{l: l, segs: segs, last: len(segs) - 1, how: unfoldSyntax(st.mode == XMLTools),
		budget: window - completionReserve(window, a.MaxTokens) - overheadTokens(sys, tools, output)}
	for _, m := range tail {
		cu.budget -= messageTokens(m)
	}
	cu.prior = a.priorOf(st.session, st.c)
	cu.open = turnOpening(st.c, segs)
	cu.score(st.session)
	cu.decide()
	cu.fit()
	if a.summarise(ctx, st.session, cu) {
		cu.recost() // model summaries are not the length the extractive ones were
		cu.fit()
	}
	msgs := cu.render(sys, tail)
	a.recordTiers(st.session, st.c, cu)
	return msgs
}

// The segments recorded beside a long conversation were read whole before
// every model call, as many as the conversation has. So the convo keeps
// them as of the thread's TiersVersion (priorOf), applies what the
// librarian records itself (recordTiers), and reads them again only when
// someone else changed them (an operator's fold, context_unfold) or a
// record replaced others.

// priorOf returns the segments recorded for session, by first slot; c's
// copy when it is still the thread's. The map is not modified.
func (a *Agent) priorOf(session string, c *convo) map[int]registry.Segment {
	tc, ok := a.History.Thread(session)
	if !ok {
		return map[int]registry.Segment{}
	}
	keep := c.tc == tc && !c.diverged
	v := tc.TiersVersion()
	if keep && c.prior != nil && c.priorVer == v {
		return c.prior
	}
	rec := tc.Recorded()
	prior := make(map[int]registry.Segment, len(rec))
	for _, s := range rec {
		prior[s.Index] = s
	}
	if keep {
		c.prior, c.priorVer = prior, v
	}
	return prior
}

// turnOpening returns the segment of the message that opened the current
// turn (the caller's latest), else the latest received message, else the
// latest segment.
func turnOpening(c *convo, segs []*segment) int {
	if c.turnStart >= 0 {
		for i, s := range segs {
			if s.item >= c.turnStart {
				return i
			}
		}
	}
	for i := len(segs) - 1; i >= 0; i-- {
		if segs[i].kind == contentMessage {
			return i
		}
	}
	return len(segs) - 1
}

// score computes each segment's relevance to the task: the turn's opening
// message and the latest segment.
func (cu *curation) score(thread string) {
	docs := make([]docVec, len(cu.segs))
	for i, s := range cu.segs {
		docs[i] = cu.l.lex.vector(docKey{thread: thread, index: s.index, size: len(s.text)}, s.text)
	}
	query := []docVec{docs[cu.open]}
	if cu.last != cu.open {
		query = append(query, docs[cu.last])
	}
	cu.scores = relevance(docs, query...)
	for i := range cu.scores {
		cu.scores[i] = math.Round(cu.scores[i]*1000) / 1000
	}
}

// decide sets each segment's tier by relevance, and its class.
func (cu *curation) decide() {
	n := len(cu.segs)
	cu.tiers, cu.class = make([]registry.Tier, n), make([]int, n)
	cu.summaries, cu.by = make([]string, n), make([]string, n)
	cu.noteTokens, cu.costs = make([]int, n), make([]int, n)
	pinned := map[int]bool{}
	for _, s := range cu.segs[cu.open:] {
		for _, id := range s.unfolds {
			if idx, ok := registry.ParseSegmentID(id); ok {
				pinned[idx] = true
			}
		}
	}
	l := cu.l
	for i, s := range cu.segs {
		p, had := cu.prior[s.index]
		if had {
			cu.summaries[i], cu.by[i] = p.Summary, p.SummaryBy
		}
		cu.tiers[i] = registry.TierExpanded
		switch {
		case i >= cu.open:
			cu.class[i] = 2
			continue
		case i >= cu.open-l.KeepRecent || pinned[s.index]:
			cu.class[i] = 1
			continue
		}
		threshold := l.FoldBelow
		if had && p.Tier != registry.TierExpanded {
			threshold = max(l.UnfoldAbove, l.FoldBelow)
		}
		if cu.scores[i] < threshold && s.tokens >= l.MinFoldTokens && cu.foldable(i) {
			cu.tiers[i] = registry.TierFolded
		}
	}
	cu.recost()
}

// summary returns segment i's fold summary, an extractive one when it has
// none yet.
func (cu *curation) summary(i int) string {
	if cu.summaries[i] == "" {
		cu.summaries[i], cu.by[i] = extractive(cu.segs[i].text, cu.l.summaryBytes()), extractiveBy
	}
	return cu.summaries[i]
}

// note is the message standing for folded segment i.
func (cu *curation) note(i int) string {
	s := cu.segs[i]
	return "[" + s.id() + " folded — " + s.describe() + "] " + cu.summary(i) + " [folded: " + cu.how.read(s.id()) +
		" to read it]"
}

// noteCost is what folded segment i costs: note's length, reckoned
// without building it.
func (cu *curation) noteCost(i int) int {
	if cu.noteTokens[i] == 0 {
		s := cu.segs[i]
		n := len("[ folded — ] ") + len(cu.summary(i)) + len(" [folded:  to read it]") + cu.how.readLen(s.id()) +
			len(s.id()) + len(s.describe())
		cu.noteTokens[i] = 4 + (n+3)/4
	}
	return cu.noteTokens[i]
}

// foldable reports whether folding segment i saves anything.
func (cu *curation) foldable(i int) bool { return cu.segs[i].tokens > cu.noteCost(i) }

// costAt is what segment i costs the request at its tier.
func (cu *curation) costAt(i int) int {
	switch cu.tiers[i] {
	case registry.TierFolded:
		return cu.noteCost(i)
	case registry.TierEvicted:
		return 0
	}
	return cu.segs[i].tokens
}

// setTier moves segment i to tier t, keeping the sum of the costs.
func (cu *curation) setTier(i int, t registry.Tier) {
	cu.sum -= cu.costs[i]
	cu.tiers[i] = t
	cu.costs[i] = cu.costAt(i)
	cu.sum += cu.costs[i]
}

// recost recomputes every cost (the summaries changed).
func (cu *curation) recost() {
	cu.sum = 0
	for i := range cu.segs {
		cu.noteTokens[i] = 0
		cu.costs[i] = cu.costAt(i)
		cu.sum += cu.costs[i]
	}
}

// evictedIDs lists the evicted segments' ids, at most the first and last
// eight (evictedNote lists no more).
func (cu *curation) evictedIDs() []string {
	k := cu.evicted
	var idx []int
	if k <= 16 {
		for i := range k {
			idx = append(idx, i)
		}
	} else {
		idx = []int{0, 1, 2, 3, 4, 5, 6, 7, -1, k - 8, k - 7, k - 6, k - 5, k - 4, k - 3, k - 2, k - 1}
	}
	ids := make([]string, len(idx))
	for j, i := range idx {
		if i < 0 {
			ids[j] = "…"
			continue
		}
		ids[j] = cu.segs[i].id()
	}
	return ids
}

// evictedNote is the note standing for the n evicted segments, ids as
// evictedIDs lists them, saying how to read them in the model's mode.
func evictedNote(n int, ids []string, how unfoldSyntax) string {
	s := "s"
	if n == 1 {
		s = ""
	}
	if how.xml() {
		return fmt.Sprintf("[%d earlier segment%s of this conversation evicted to fit the context window: %s. Write "+
			"%s to read one, or %s to list them with their summaries.]", n, s, strings.Join(ids, ", "),
			how.read("id"), unfoldListElement)
	}
	return fmt.Sprintf("[%d earlier segment%s of this conversation evicted to fit the context window: %s. Call %s(\"id\") "+
		"to read one, or %s with no id to list them with their summaries.]", n, s, strings.Join(ids, ", "),
		unfoldTool, unfoldTool)
}

// total is what the conversation costs at the current tiers.
func (cu *curation) total() int {
	if cu.evicted == 0 {
		return cu.sum
	}
	if cu.evictedFor != cu.evicted {
		cu.evictedCost, cu.evictedFor = 4+estimateText(evictedNote(cu.evicted, cu.evictedIDs(), cu.how)), cu.evicted
	}
	return cu.sum + cu.evictedCost
}

// fit folds, then evicts, until the conversation fits the budget: old
// segments are folded first (least relevant first), then recent ones and
// those unfolded in this turn, then the oldest before the current turn are
// evicted, then the current turn's are folded and, last, evicted — all but
// the latest segment, which always stays. Evicted segments are always the
// oldest ones.
func (cu *curation) fit() {
	if cu.total() <= cu.budget {
		return
	}
	order := make([]int, 0, cu.last)
	for i := range cu.last {
		order = append(order, i)
	}
	slices.SortStableFunc(order, func(x, y int) int {
		return cmp.Or(cmp.Compare(cu.scores[x], cu.scores[y]), cmp.Compare(x, y))
	})
	fold := func(class int) bool {
		for _, i := range order {
			if cu.total() <= cu.budget {
				return true
			}
			if cu.class[i] == class && cu.tiers[i] == registry.TierExpanded && cu.foldable(i) {
				cu.setTier(i, registry.TierFolded)
			}
		}
		return cu.total() <= cu.budget
	}
	// While evicting, the note about the evicted segments is reckoned at
	// its longest (building it at every step would cost more than the
	// rest of the curation); it is reckoned exactly once they are chosen.
	bound := 0
	evict := func(to int) bool {
		if bound == 0 && cu.last >= 0 {
			bound = 4 + estimateText(evictedNote(cu.last, slices.Repeat([]string{cu.segs[cu.last].id()}, 17), cu.how))
		}
		for cu.evicted < to && cu.sum+bound > cu.budget {
			cu.setTier(cu.evicted, registry.TierEvicted)
			cu.evicted++
		}
		return cu.total() <= cu.budget
	}
	_ = fold(0) || fold(1) || evict(cu.open) || fold(2) || evict(cu.last)
}

// summarise asks the librarian's model for the summaries of folded
// segments that have none of its own yet, newest first, at most
// MaxSummaries, concurrently; a failure leaves the extractive summary. It
// reports whether any summary changed.
func (a *Agent) summarise(ctx context.Context, thread string, cu *curation) bool {
	l := cu.l
	if l.Model == "" || l.LLM == nil {
		return false
	}
	var todo []int
	for i := len(cu.segs) - 1; i >= 0 && len(todo) < l.maxSummaries(); i-- {
		if cu.tiers[i] == registry.TierFolded && (cu.summaries[i] == "" || cu.by[i] == extractiveBy) {
			todo = append(todo, i)
		}
	}
	if len(todo) == 0 {
		return false
	}
	got := make([]string, len(todo))
	errs := make([]error, len(todo))
	var wg sync.WaitGroup
	for k, i := range todo {
		wg.Go(func() { got[k], errs[k] = l.summarise(ctx, thread, cu.segs[i].fullText(), l.summaryBytes()) })
	}
	wg.Wait()
	changed := false
	for k, i := range todo {
		if errs[k] != nil {
			l.logger().Warn("librarian: model summary failed; the extractive one stands", "agent", a.Name, "thread", thread,
				"segment", cu.segs[i].id(), "model", l.Model, "error", errs[k])
			continue
		}
		cu.summaries[i], cu.by[i] = got[k], l.Model
		changed = true
	}
	return changed
}

// unfoldedNote replaces the result of a context_unfold call whose segment
// stands expanded in the same request.
const unfoldedNote = "Segment %s is unfolded: its full text stands in its place earlier in this conversation."

// render builds the messages: sys, the note about evicted segments, each
// segment at its tier, tail.
func (cu *curation) render(sys, tail []Message) []Message {
	n := len(sys) + len(tail) + 1
	for i, s := range cu.segs[cu.evicted:] {
		switch cu.tiers[cu.evicted+i] {
		case registry.TierFolded:
			n++
		case registry.TierExpanded:
			n += len(s.msgs)
		}
	}
	out := make([]Message, 0, n) // the request's size: most of a long conversation is evicted
	out = append(out, sys...)
	if cu.evicted > 0 {
		out = append(out, Message{Role: User, Content: evictedNote(cu.evicted, cu.evictedIDs(), cu.how)})
	}
	inPlace := map[string]bool{}
	for i, s := range cu.segs {
		if cu.tiers[i] == registry.TierExpanded && len(s.text) <= MaxHistoryText {
			inPlace[s.id()] = true
		}
	}
	for i, s := range cu.segs {
		switch cu.tiers[i] {
		case registry.TierEvicted:
		case registry.TierFolded:
			out = append(out, Message{Role: s.role(), Content: cu.note(i)})
		default:
			if len(s.unfolds) == 0 {
				out = append(out, s.msgs...)
				continue
			}
			for _, m := range s.msgs {
				if id, ok := s.unfolds[m.ToolCallID]; ok && (m.Role == Tool || s.kind == contentNote) && !m.IsError && inPlace[id] &&
					!strings.Contains(m.Content, unfoldMoreMark) && id != s.id() {
					m.Content = fmt.Sprintf(unfoldedNote, id)
				}
				out = append(out, m)
			}
		}
	}
	return append(out, tail...)
}

// recordTiers records what changed of the segments in the history.
func (a *Agent) recordTiers(thread string, c *convo, cu *curation) {
	var recs []registry.Segment
	counts := map[registry.Tier]int{}
	for i, s := range cu.segs {
		counts[cu.tiers[i]]++
		rec := registry.Segment{Index: s.index, Slots: s.slots, ContentType: s.kind, Tier: cu.tiers[i],
			Relevance: cu.scores[i], Scored: true, Summary: cu.summaries[i], SummaryBy: cu.by[i], Bytes: s.bytes,
			Tokens: s.tokens}
		if p, ok := cu.prior[s.index]; ok && p.Tier == rec.Tier && p.Summary == rec.Summary && p.Tokens == rec.Tokens &&
			p.Bytes == rec.Bytes && math.Abs(p.Relevance-rec.Relevance) < 0.01 && slices.Equal(p.Slots, rec.Slots) {
			continue
		}
		recs = append(recs, rec)
	}
	if len(recs) > 0 {
		out, before, after, err := a.History.PutSegmentsVersion(thread, recs)
		switch {
		case err != nil:
			a.logger().Warn("librarian: segments not recorded", "agent", a.Name, "thread", thread, "error", err)
		case c.prior != nil && c.priorVer == before && after == before+uint64(len(out)):
			// c.prior is what was recorded before, and the put replaced
			// only the segments it recorded: it is now what is recorded.
			for _, s := range out {
				s.Slots = slices.Clone(s.Slots)
				c.prior[s.Index] = s
			}
			c.priorVer = after
		default:
			c.prior = nil
		}
	}
	a.logger().Debug("librarian curated the context", "agent", a.Name, "thread", thread, "segments", len(cu.segs),
		"expanded", counts[registry.TierExpanded], "folded", counts[registry.TierFolded],
		"evicted", counts[registry.TierEvicted], "budget", cu.budget)
}
