package console

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// maxMine bounds the conversations a console remembers as its own (whose
// streamed text it shows, whose turns it counts): the least recently sent
// on are forgotten first, but never one still running or current for an
// agent (see remember), so the bound may be passed by those.
const maxMine = 1024

// conversations are the console's conversations: which one an @agent line
// continues, which are still running, and which are its own (the ones whose
// streamed text it shows). Successive lines to one agent continue one
// conversation until /new; a line to a listener that is not an agent always
// begins a new one (a tool answers each call on its own).
type conversations struct {
	mu sync.Mutex
	// current maps an agent (lower-case) to the conversation its next @
	// line continues; order lists those agents, first begun first.
	current map[string]string
	order   []string
	// last is the agent of the last @ line that began or continued one ("" after /new).
	last string
	// running holds the conversations sent on and not yet complete.
	running map[string]bool
	// mine holds the conversations the console sent on; mineOrder lists
	// them, least recently sent on first (bounded: remember).
	mine      map[string]bool
	mineOrder []string
	// agents caches which listener names are agents (lower-case name →
	// agent), refreshed when a name is not in it.
	agents map[string]bool
	// killed holds the conversations /kill is stopping whose completion
	// has not been seen: /kill says so itself.
	killed map[string]bool
	// pendingKills counts the /kill calls under way that named no running
	// conversation of the console (an inner thread, say): which one they
	// stop is known only once they return, so the early ends told
	// meanwhile wait in held (conversation → text) for them
	// (conversations_kill.go).
	pendingKills int
	held         map[string]string
	// unanswered maps a running conversation whose latest line nothing
	// answered yet (no reply, print or failure) to that line's target.
	unanswered map[string]string
	// done holds, per running conversation, the channels closed when it
	// completes (see whenCompleted).
	done map[string][]chan struct{}
	// turns counts, per conversation of mine, the lines sent on it: the
	// turn of its latest line, which a wait for its completion waits for
	// (see outbox.wait) — not an earlier line's completion told late.
	turns map[string]uint64
}

func newConversations() *conversations {
	return &conversations{current: map[string]string{}, running: map[string]bool{}, mine: map[string]bool{},
		agents: map[string]bool{}, killed: map[string]bool{}, held: map[string]string{}, unanswered: map[string]string{},
		done: map[string][]chan struct{}{}, turns: map[string]uint64{}}
}

// isAgent reports whether target names an agent, asking the backend for its
// listeners when the name is not cached. A backend that cannot say makes
// every target a plain listener (each line a new conversation).
func (cs *conversations) isAgent(ctx context.Context, d organism.Directory, target string) bool {
	cs.mu.Lock()
	agent, ok := cs.agents[target]
	cs.mu.Unlock()
	if ok {
		return agent
	}
	ls, err := d.Listeners(ctx)
	if err != nil {
		return false
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for _, l := range ls {
		cs.agents[strings.ToLower(l.Name)] = l.Agent
	}
	return cs.agents[target]
}

// currentOf returns the conversation target's next @ line continues ("" for
// none).
func (cs *conversations) currentOf(target string) string {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.current[target]
}

// sending records that a message to target is about to travel on conv: it
// is the console's own, running until its completion is seen, and
// unanswered until something of it is shown. It returns the message's
// turn of conv (see turnOf).
func (cs *conversations) sending(target, conv string) uint64 {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.running[conv] = true
	cs.unanswered[conv] = target
	cs.remember(conv)
	cs.turns[conv]++
	return cs.turns[conv]
}

// remember makes conv the console's most recently sent on conversation
// and, beyond maxMine, forgets the least recently sent on that is neither
// running nor an agent's current one: those a line may still continue or
// a piped session wait on, whose turns must go on counting (a turn counted
// from 1 again would find an earlier turn's completion and not wait). It
// runs with cs.mu held.
func (cs *conversations) remember(conv string) {
	if cs.mine[conv] {
		if i := slices.Index(cs.mineOrder, conv); i >= 0 {
			cs.mineOrder = slices.Delete(cs.mineOrder, i, i+1)
		}
	}
	cs.mine[conv] = true
	cs.mineOrder = append(cs.mineOrder, conv)
	if len(cs.mineOrder) <= maxMine {
		return
	}
	for i, old := range cs.mineOrder {
		if cs.running[old] || cs.isCurrentLocked(old) {
			continue
		}
		delete(cs.mine, old)
		delete(cs.turns, old)
		cs.mineOrder = slices.Delete(cs.mineOrder, i, i+1)
		return
	}
}

// isCurrentLocked reports whether conv is an agent's current conversation
// (cs.mu held).
func (cs *conversations) isCurrentLocked(conv string) bool {
	for _, agent := range cs.order {
		if cs.current[agent] == conv {
			return true
		}
	}
	return false
}

// sent records the outcome of a send on conv to target (its turn, as
// sending returned it): a failed one is not running (and, if it would have
// begun the conversation, not current) and no turn of it, so nothing waits
// for its completion; an agent's conversation becomes target's current
// one.
func (cs *conversations) sent(target, conv string, turn uint64, agent bool, err error) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if err != nil {
		delete(cs.running, conv)
		delete(cs.unanswered, conv)
		if cs.turns[conv] == turn {
			cs.turns[conv] = turn - 1
		}
		return
	}
	if !agent {
		return
	}
	if _, ok := cs.current[target]; !ok {
		cs.order = append(cs.order, target)
	}
	cs.current[target] = conv
	cs.last = target
}

// completed records that conv has nothing in flight any more, and returns
// the turn that completed with it: its latest (0 for a conversation the
// console never sent on).
func (cs *conversations) completed(conv string) uint64 {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	delete(cs.running, conv)
	delete(cs.unanswered, conv)
	for _, ch := range cs.done[conv] {
		close(ch)
	}
	delete(cs.done, conv)
	return cs.turns[conv]
}

// turnOf returns the turn of conv's latest line: how many lines the
// console sent on it (0: none, or it was forgotten).
func (cs *conversations) turnOf(conv string) uint64 {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.turns[conv]
}

// answered records that something of conv was shown: a reply, a printed
// line, a failure.
func (cs *conversations) answered(conv string) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	delete(cs.unanswered, conv)
}

// unansweredBy returns the target of conv's latest line when nothing of
// conv was shown since it was sent ("", false otherwise).
func (cs *conversations) unansweredBy(conv string) (string, bool) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	target, ok := cs.unanswered[conv]
	return target, ok
}

// endedEarly drops conv, which ended without its answer for reason, from
// the agent it is current for, and returns the line that says so.
func (cs *conversations) endedEarly(conv, reason string) string {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for _, agent := range cs.order {
		if cs.current[agent] != conv {
			continue
		}
		delete(cs.current, agent)
		cs.order = slices.DeleteFunc(cs.order, func(a string) bool { return a == agent })
		if cs.last == agent {
			cs.last = ""
		}
		return fmt.Sprintf("[%s] %s; the next @%s line begins a new conversation", label(agent, conv), reason, agent)
	}
	return fmt.Sprintf("[%s] %s", short(conv), reason)
}

// isRunning reports whether conv was sent on and has not completed.
func (cs *conversations) isRunning(conv string) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.running[conv]
}

// isMine reports whether the console sent on conv.
func (cs *conversations) isMine(conv string) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.mine[conv]
}

// forget drops target's current conversation (every agent's when target is
// ""); the next @ line to it begins a new one. It returns the labels of the
// conversations dropped.
func (cs *conversations) forget(target string) []string {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	var dropped []string
	for _, agent := range slices.Clone(cs.order) {
		if target != "" && agent != target {
			continue
		}
		dropped = append(dropped, label(agent, cs.current[agent]))
		delete(cs.current, agent)
		cs.order = slices.DeleteFunc(cs.order, func(a string) bool { return a == agent })
		if cs.last == agent {
			cs.last = ""
		}
	}
	return dropped
}

// prompt is the terminal prompt: base, after the label of the conversation
// the last @ line used while it is still current.
func (cs *conversations) prompt(base string) string {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	conv, ok := cs.current[cs.last]
	if cs.last == "" || !ok {
		return base
	}
	l := cs.last + "#" + conv[:min(4, len(conv))]
	if strings.HasPrefix(base, ">") {
		return l + base
	}
	return l + " " + base
}

// list describes the current conversations, first begun first, for
// /threads.
func (cs *conversations) list() []string {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	var out []string
	for _, agent := range cs.order {
		conv := cs.current[agent]
		line := fmt.Sprintf("  %-24s @%s continues it", label(agent, conv), agent)
		if cs.running[conv] {
			line += "; answering"
		}
		if agent == cs.last {
			line += " (current)"
		}
		out = append(out, line)
	}
	return out
}

// label names a conversation as the console shows it: agent#<id prefix>.
func label(agent, conv string) string { return agent + "#" + short(conv) }

// currents returns the conversations the agents' next @ lines continue.
func (cs *conversations) currents() []string {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	out := make([]string, 0, len(cs.order))
	for _, agent := range cs.order {
		out = append(out, cs.current[agent])
	}
	return out
}

// runningLabels names the console's conversations still running, as
// label shows them (agent#id when an agent's current one, else the id),
// sorted.
func (cs *conversations) runningLabels() []string {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	byConv := make(map[string]string, len(cs.current))
	for agent, conv := range cs.current {
		byConv[conv] = agent
	}
	out := make([]string, 0, len(cs.running))
	for conv := range cs.running {
		if agent, ok := byConv[conv]; ok {
			out = append(out, label(agent, conv))
		} else {
			out = append(out, short(conv))
		}
	}
	slices.Sort(out)
	return out
}

// runningConvs returns the console's conversations still running, in the
// order runningLabels names them.
func (cs *conversations) runningConvs() []string {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	out := make([]string, 0, len(cs.running))
	for conv := range cs.running {
		out = append(out, conv)
	}
	slices.SortFunc(out, func(a, b string) int { return strings.Compare(cs.labelLocked(a), cs.labelLocked(b)) })
	return out
}

// unansweredConvs returns the console's conversations still running of
// which nothing was shown since their latest line (a reply, a printed line
// or a failure: a streamed part does not count), in the order
// runningLabels names them. One whose answer showed and that has yet to
// complete is not among them.
func (cs *conversations) unansweredConvs() []string {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	out := make([]string, 0, len(cs.running))
	for conv := range cs.running {
		if _, waiting := cs.unanswered[conv]; waiting {
			out = append(out, conv)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return strings.Compare(cs.labelLocked(a), cs.labelLocked(b)) })
	return out
}

// labelOf names conv (id when conv is ""), as runningLabels does.
func (cs *conversations) labelOf(conv, id string) string {
	if conv == "" {
		conv = id
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.labelLocked(conv)
}

// labelLocked is labelOf with cs.mu held.
func (cs *conversations) labelLocked(conv string) string {
	for agent, cur := range cs.current {
		if cur == conv {
			return label(agent, conv)
		}
	}
	return short(conv)
}
