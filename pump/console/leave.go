package console

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// goodbye ends a terminal session (/quit, /exit, Ctrl-D, a Ctrl-C at
// rest) with a line saying so. In process, the console's answers still
// coming (nothing of them shown yet) are cancelled first, as a Ctrl-C
// cancels them: nobody will read them, the organism's shutdown would
// otherwise wait on them and give up with them in flight, and its next
// start would ask the model again; their conversations go on at the next
// start. Over a connection the organism goes on with them, and the line
// names them. A conversation whose answer showed and that has yet to
// complete is left to complete, and one that completes within quitGrace
// (its stream was ending as the user left) is not cancelled: what the user
// read is kept as the answer.
func (c *Console) goodbye(ctx context.Context) {
	_, remote := c.b.(*Remote)
	if _, ok := c.b.(organism.Canceller); ok && !remote {
		c.convs.settleAll(ctx, c.convs.unansweredConvs(), quitGrace)
		for _, conv := range c.convs.unansweredConvs() {
			c.cancelOne(ctx, "", conv, short(conv))
		}
	}
	var waiting []string
	for _, conv := range c.convs.unansweredConvs() {
		waiting = append(waiting, c.convs.labelOf(conv, conv))
	}
	if len(waiting) == 0 {
		c.say("Goodbye.")
		return
	}
	fate := "they stop as the organism shuts down"
	if remote {
		fate = "the organism goes on with them"
	}
	c.say(fmt.Sprintf("Goodbye. Still answering, not shown here: %s (%s).", strings.Join(waiting, ", "), fate))
}

// quitGrace is how long leaving waits for the console's conversations
// still answering to complete before it cancels them.
const quitGrace = 3 * time.Second

// announceWait says, when someone watches a piped session's output on a
// terminal, that the session waits for conversations still running
// rather than sitting silent.
func (c *Console) announceWait(running []started) {
	c.sess.mu.Lock()
	interactive := c.sess.interactive
	c.sess.mu.Unlock()
	if !interactive {
		return
	}
	n := 0
	for _, s := range running {
		if c.convs.isRunning(s.conv) {
			n++
		}
	}
	switch n {
	case 0:
	case 1:
		c.say("waiting for 1 conversation (Ctrl-C to stop)…")
	default:
		c.say(fmt.Sprintf("waiting for %d conversations (Ctrl-C to stop)…", n))
	}
}
