package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/term"
)

// RunTerminal serves a session on an x/term Terminal: line editing, up/down
// history, Ctrl-C or Ctrl-D on an empty line end the session (RunStdio
// keeps a Ctrl-C from ending it while conversations are running), and output
// arriving while the user types is written through the Terminal so the prompt
// and the half-typed line are redrawn below it. The text an agent streams
// shows as it arrives, its unfinished line kept just above the prompt; the
// prompt names the conversation the last @ line used (poet#3f2a> ). It
// does not wait for conversations to complete. It returns nil at /quit,
// Ctrl-C or Ctrl-D.
func (c *Console) RunTerminal(ctx context.Context, t *term.Terminal) error {
	t.SetPrompt(c.convs.prompt(c.cfg.Prompt))
	c.sess.setPrompt = t.SetPrompt
	defer func() { c.sess.setPrompt = nil }()
	return c.serve(ctx, t, true, func() (string, error) {
		line, err := t.ReadLine()
		if errors.Is(err, term.ErrPasteIndicator) {
			err = nil // a pasted line is still a line
		}
		return line, err
	})
}

// RunStdio serves a session on the process's standard streams: RunTerminal
// with the terminal in raw mode (restored on return) when both are
// terminals, Run otherwise.
func (c *Console) RunStdio(ctx context.Context, in, out *os.File) error {
	inFd, outFd := int(in.Fd()), int(out.Fd())
	if !term.IsTerminal(inFd) || !term.IsTerminal(outFd) {
		return c.Run(ctx, in, out)
	}
	old, err := term.MakeRaw(inFd)
	if err != nil {
		return fmt.Errorf("console: raw mode: %w", err)
	}
	defer func() {
		_ = term.Restore(inFd, old) // best effort: the session is over either way
		_, _ = io.WriteString(out, "\n")
	}()
	t := term.NewTerminal(struct {
		io.Reader
		io.Writer
	}{c.screenInterrupts(in), out}, c.cfg.Prompt)
	resize := func() {
		// A terminal that reports no size (0×0, e.g. a fresh pty) keeps
		// the Terminal's default 80×24.
		if w, h, err := term.GetSize(outFd); err == nil && w > 0 && h > 0 {
			_ = t.SetSize(w, h) // SetSize only fails writing a redraw; the size is set
			c.width.Store(int64(w))
		}
	}
	resize()
	stop := onResize(resize)
	defer stop()
	return c.RunTerminal(ctx, t)
}
