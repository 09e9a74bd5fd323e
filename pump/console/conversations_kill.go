package console

import (
	"cmp"
	"slices"
)

// heldEnd is the early end of a conversation told while a /kill was under
// way whose conversation was not yet known: the kill's own line tells it
// if it was that conversation, else it is told when the kill returns.
type heldEnd struct {
	conv, text string
}

// killing records that /kill of thread id is about to stop its
// conversation, which may still be running: its completion, when it
// comes, is not announced again. It reports whether the conversation is
// known yet (id is one of the console's running conversations); if not,
// early ends told until killDone wait for it (endTold).
func (cs *conversations) killing(id string) (known bool) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.running[id] {
		cs.killed[id] = true
		return true
	}
	cs.pendingKills++
	return false
}

// killDone records that the /kill of thread id that killing(id) reported
// known or not returned, having stopped conv ("" for none): conv's early
// end is told by /kill — dropped if it was held, suppressed if it is
// still to come — and it returns the other early ends held meanwhile, to
// be told now (none while another such /kill is under way).
func (cs *conversations) killDone(id, conv string, known bool) []heldEnd {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if !known {
		cs.pendingKills--
	}
	if conv != "" {
		if _, ok := cs.held[conv]; ok {
			delete(cs.held, conv)
		} else if conv != id && cs.running[conv] {
			cs.killed[conv] = true
		}
	}
	if cs.pendingKills > 0 || len(cs.held) == 0 {
		return nil
	}
	out := make([]heldEnd, 0, len(cs.held))
	for c, text := range cs.held {
		out = append(out, heldEnd{c, text})
	}
	clear(cs.held)
	slices.SortFunc(out, func(a, b heldEnd) int { return cmp.Compare(a.conv, b.conv) })
	return out
}

// endTold decides, as conv completes having ended early for text ("" for
// an ordinary end), whether its end was or will be told by /kill: it was
// (told), or it is held until a /kill under way that may have stopped it
// returns (held). Either way the completion does not tell it.
func (cs *conversations) endTold(conv, text string) (told, held bool) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.killed[conv] {
		delete(cs.killed, conv)
		return true, false
	}
	if text != "" && cs.pendingKills > 0 && cs.mine[conv] {
		cs.held[conv] = text
		return false, true
	}
	return false, false
}

// announced reports whether conv's early end was told already (by /kill),
// forgetting it.
func (cs *conversations) announced(conv string) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	told := cs.killed[conv]
	delete(cs.killed, conv)
	return told
}
