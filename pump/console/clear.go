package console

import "context"

// cmdClear is /clear: on a terminal it clears the screen (what an agent is
// still streaming is drawn again at the top); on a pipe it does nothing, so
// a transcript stays plain text.
func (c *Console) cmdClear(context.Context, string) {
	if c.sess.terminal.Load() {
		c.out.clearScreen()
	}
}
