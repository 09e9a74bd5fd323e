package console

import (
	"context"
	"io"
	"strings"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// ctrlC is the byte a terminal in raw mode sends for Ctrl-C.
const ctrlC = 0x03

// interruptReader is a terminal's input with Ctrl-C screened: x/term ends
// the session at any Ctrl-C, so one typed while the console's conversations
// are running is taken out of the input (and onInterrupt says what the user
// can do) rather than end the session — and with it an in-process organism
// — in the middle of an answer.
type interruptReader struct {
	r io.Reader
	// onInterrupt is called for each Ctrl-C; it reports whether the
	// Ctrl-C goes on to the Terminal (which ends the session).
	onInterrupt func() (pass bool)
}

// Read implements io.Reader.
func (ir *interruptReader) Read(p []byte) (int, error) {
	for {
		n, err := ir.r.Read(p)
		out := p[:0]
		for _, b := range p[:n] {
			if b == ctrlC && !ir.onInterrupt() {
				continue
			}
			out = append(out, b)
		}
		// A read of nothing but screened Ctrl-Cs reads on: the Terminal
		// takes (0, nil) as no input yet, but a reader should not.
		if len(out) > 0 || err != nil || n == 0 {
			return len(out), err
		}
	}
}

// screenInterrupts returns in with Ctrl-C screened while conversations of
// the console are running.
func (c *Console) screenInterrupts(in io.Reader) io.Reader {
	return &interruptReader{r: in, onInterrupt: c.interrupt}
}

// interruptWait bounds the cancels a Ctrl-C starts (a remote organism's
// answer to them).
const interruptWait = 30 * time.Second

// interrupt handles a Ctrl-C on the terminal: with none of the console's
// conversations running it ends the session as before; with some running
// it keeps the session (ending it would cut the answers off) and cancels
// their answers, keeping their conversations (see interruptCancels) — or,
// over a connection that cannot cancel, says how to stop them. The cancels
// run beside the terminal's reader, which must not wait for them.
func (c *Console) interrupt() (pass bool) {
	running := c.convs.runningLabels()
	if len(running) == 0 {
		return true
	}
	if _, ok := c.b.(organism.Canceller); ok {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), interruptWait)
			defer cancel()
			c.interruptCancels(ctx)
		}()
		return false
	}
	c.say("^C: " + strings.Join(running, ", ") + " still answering; /kill <agent> stops one for good, " +
		"/halt stops every agent. Ctrl-D on an empty line or /quit leaves.")
	return false
}
