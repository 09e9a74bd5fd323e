package console

import (
	"fmt"
	"strings"
)

// goodbye ends a terminal session (/quit, /exit, Ctrl-D, a Ctrl-C at
// rest) with a line saying so, and which of the console's conversations
// were still answering: their answers will not show here.
func (c *Console) goodbye() {
	running := c.convs.runningLabels()
	if len(running) == 0 {
		c.say("Goodbye.")
		return
	}
	fate := "they stop as the organism shuts down"
	if _, remote := c.b.(*Remote); remote {
		fate = "the organism goes on with them"
	}
	c.say(fmt.Sprintf("Goodbye. Still answering, not shown here: %s (%s).", strings.Join(running, ", "), fate))
}

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
