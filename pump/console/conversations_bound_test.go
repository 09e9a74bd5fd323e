package console

import (
	"fmt"
	"testing"
)

// TestConversationsBoundKeepsWhatGoesOn: the console forgets its oldest
// conversations beyond maxMine, but never one a line can still continue (an
// agent's current conversation) or one still running — whose turns a
// piped session waits on. Before, a conversation begun first was
// forgotten however recently it was continued: its next line counted turn
// 1 again, the wait for it found an older turn's completion and returned
// at once, and a piped session read on — or exited — before the answer.
func TestConversationsBoundKeepsWhatGoesOn(t *testing.T) {
	cs := newConversations()
	line := func(target, conv string, agent bool) uint64 {
		turn := cs.sending(target, conv)
		cs.sent(target, conv, turn, agent, nil)
		return turn
	}
	tools := func(from, n int) {
		for i := from; i < from+n; i++ {
			conv := fmt.Sprintf("tool-%d", i)
			line("calc", conv, false)
			cs.completed(conv)
		}
	}
	line("poet", "poem", true) // the poet's conversation: continued now and then
	cs.completed("poem")
	line("critic", "review", true) // still answering all along
	tools(0, maxMine/2)
	if turn := line("poet", "poem", true); turn != 2 {
		t.Fatalf("the poem's second line is turn %d, want 2", turn)
	}
	cs.completed("poem")
	tools(maxMine/2, maxMine)
	for _, conv := range []string{"poem", "review"} {
		if !cs.isMine(conv) {
			t.Errorf("%s forgotten after %d other conversations", conv, maxMine+maxMine/2)
		}
	}
	if got := cs.turnOf("review"); got != 1 {
		t.Errorf("the running review's turn %d, want 1 (a wait for it would not wait)", got)
	}
	if turn := line("poet", "poem", true); turn != 3 {
		t.Errorf("the poem's third line is turn %d, want 3 (a wait for it would find turn 2 done)", turn)
	}
	if cs.isMine("tool-0") {
		t.Error("the oldest tool conversation is still remembered: the bound does not hold")
	}
	if n := len(cs.mine); n > maxMine+2 {
		t.Errorf("%d conversations remembered, want at most %d (the bound, and what goes on)", n, maxMine+2)
	}
}
