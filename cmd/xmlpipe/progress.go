package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"
)

// progressEvery is the least time between two redraws of a progress line.
const progressEvery = 100 * time.Millisecond

// progress draws one updating status line ("verifying 1024/5000 (20%)") on
// a terminal for long operations. When its writer is not a terminal it
// writes nothing, so redirected output and logs stay clean.
type progress struct {
	w     io.Writer
	tty   bool
	label string
	now   func() time.Time

	last  time.Time // when the line was last drawn
	width int       // width of the line on screen (0: nothing drawn)
}

// newProgress returns the progress line of label on w, active only when w is
// a terminal.
func newProgress(w io.Writer, label string) *progress {
	return &progress{w: w, tty: isTerminal(w), label: label, now: time.Now}
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Update redraws the line with done of total (total <= 0: unknown), at most
// every progressEvery except for the final count.
func (p *progress) Update(done, total int64) {
	if !p.tty {
		return
	}
	now := p.now()
	if p.width > 0 && now.Sub(p.last) < progressEvery && (total <= 0 || done < total) {
		return
	}
	p.last = now
	line := fmt.Sprintf("%s %d", p.label, done)
	if total > 0 {
		line = fmt.Sprintf("%s %d/%d (%d%%)", p.label, done, total, done*100/total)
	}
	p.draw(line)
}

// draw replaces the line on screen with line.
func (p *progress) draw(line string) {
	pad := max(p.width-len(line), 0)
	fmt.Fprint(p.w, "\r"+line+strings.Repeat(" ", pad))
	p.width = len(line)
}

// Done erases the line, leaving the cursor at the start of an empty line.
func (p *progress) Done() {
	if !p.tty || p.width == 0 {
		return
	}
	fmt.Fprint(p.w, "\r"+strings.Repeat(" ", p.width)+"\r")
	p.width = 0
}
