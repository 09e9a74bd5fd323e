package console

import (
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
)

// maxDone bounds the conversations whose latest completed turn a session
// remembers (a completion can arrive before the wait for it begins): as
// many as the console remembers as its own.
const maxDone = maxMine

// outbox serialises everything the console writes: command output, listener
// output arriving on the organism's goroutines and log lines. One goroutine
// drains it, so writers never block on the terminal and lines never
// interleave. It also tells a piped session when a conversation completed,
// in order with the output that preceded the completion.
type outbox struct {
	mu       sync.Mutex
	cond     *sync.Cond
	items    []item
	stopping bool
	track    bool
	// done maps each conversation of the session that completed to its
	// latest turn whose completion was written (after everything said
	// before it); doneOrder lists them, least recently completed first.
	// waits are the waits for a turn not completed yet.
	done      map[string]uint64
	doneOrder []string
	waits     map[string]*convWait
	// broken is closed when a write to the output failed (a closed pipe);
	// writeErr is that failure.
	broken    chan struct{}
	brokeOnce sync.Once
	writeErr  error
}

// item is what the drain does next: write a line of text, signal a
// completion (complete), set or clear a live line (liveID), forget the
// live lines' place on the screen (freeze), or clear a terminal's screen
// (clear).
type item struct {
	text     string
	complete string
	turn     uint64
	liveID   string
	freeze   bool
	clear    bool
}

// convWait is a wait of a piped session for a conversation's turn: done
// is closed once a turn of it at least want completed.
type convWait struct {
	want uint64
	done chan struct{}
}

func newOutbox() *outbox {
	o := &outbox{done: map[string]uint64{}, waits: map[string]*convWait{}, broken: make(chan struct{})}
	o.cond = sync.NewCond(&o.mu)
	return o
}

// line queues text (one or more lines) for writing.
func (o *outbox) line(text string) {
	o.push(item{text: text})
}

// completed queues the completion of a conversation's turn (0: a
// conversation the console never sent on, which nobody waits for).
func (o *outbox) completed(conv string, turn uint64) {
	o.push(item{complete: conv, turn: turn})
}

// live sets the live line id to text, or removes it when text is "" (see
// liveBlock). Only a terminal session shows live lines.
func (o *outbox) live(id, text string) {
	o.push(item{liveID: id, text: text})
}

// freeze says the screen moved on below the live lines (the user entered a
// line): they stay where they are as ordinary text, and the block is empty.
func (o *outbox) freeze() {
	o.push(item{freeze: true})
}

// clearScreen clears a terminal's screen, the live lines drawn again at
// its top; a session that is no terminal ignores it.
func (o *outbox) clearScreen() {
	o.push(item{clear: true})
}

// clearSequence homes the cursor and erases the screen (ANSI).
const clearSequence = "\x1b[H\x1b[2J"

// failed reports the first write to the output that failed, once broken
// is closed.
func (o *outbox) failed() <-chan struct{} { return o.broken }

func (o *outbox) push(it item) {
	o.mu.Lock()
	o.items = append(o.items, it)
	o.mu.Unlock()
	o.cond.Signal()
}

// start drains the outbox into w until the returned stop is called; stop
// writes what is still queued, then returns. track makes completions
// observable through wait. live shows live lines (a terminal of width()
// columns); without it they are dropped.
func (o *outbox) start(w io.Writer, track, live bool, width func() int) (stop func()) {
	o.mu.Lock()
	o.stopping, o.track = false, track
	o.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		o.drain(w, live, width)
	}()
	return func() {
		o.mu.Lock()
		o.stopping = true
		o.mu.Unlock()
		o.cond.Signal()
		<-done
	}
}

func (o *outbox) drain(w io.Writer, live bool, width func() int) {
	var (
		buf   strings.Builder
		block liveBlock
		dirty bool // the live lines changed since they were drawn
	)
	flush := func() {
		if live && (dirty || buf.Len() > 0) && (block.rows > 0 || len(block.lines) > 0) {
			text := buf.String()
			buf.Reset()
			block.draw(&buf, text, width())
			dirty = false
		}
		if buf.Len() > 0 {
			if _, err := io.WriteString(w, buf.String()); err != nil {
				o.brokeOnce.Do(func() {
					o.writeErr = err
					close(o.broken)
				})
			}
			buf.Reset()
		}
	}
	for {
		o.mu.Lock()
		for len(o.items) == 0 && !o.stopping {
			o.cond.Wait()
		}
		batch := o.items
		o.items = nil
		stopping := o.stopping
		o.mu.Unlock()
		for _, it := range batch {
			switch {
			case it.liveID != "":
				if live {
					block.set(it.liveID, it.text)
					dirty = true
				}
			case it.freeze:
				flush()
				block = liveBlock{}
			case it.clear:
				if live {
					flush()
					buf.WriteString(clearSequence)
					block.rows, dirty = 0, true // gone from the screen: drawn again below the clear
				}
			case it.complete != "":
				flush()
				o.signal(it.complete, it.turn)
			default:
				buf.WriteString(it.text)
				buf.WriteByte('\n')
			}
		}
		flush()
		if stopping && len(batch) == 0 {
			return // live lines stay as they were drawn
		}
	}
}

// liveBlock is the live lines of a terminal session, drawn just above the
// prompt: each stream's unfinished line, in the order they began.
type liveBlock struct {
	lines []liveLine
	// rows is how many screen rows the block took when last drawn (0: not
	// on the screen, or frozen above an entered line).
	rows int
}

// liveLine is one live line.
type liveLine struct{ id, text string }

// set sets line id to text; "" removes it.
func (b *liveBlock) set(id, text string) {
	for i, l := range b.lines {
		if l.id == id {
			if text == "" {
				b.lines = append(b.lines[:i], b.lines[i+1:]...)
			} else {
				b.lines[i].text = text
			}
			return
		}
	}
	if text != "" {
		b.lines = append(b.lines, liveLine{id, text})
	}
}

// draw writes to buf what replaces the block on the screen: the cursor
// moves up over the rows it took and clears them (the terminal has already
// cleared its prompt), then the new lines (text, each ending in a newline)
// are written, then the block again, each line ending in a newline so the
// prompt follows below.
func (b *liveBlock) draw(buf *strings.Builder, text string, width int) {
	if b.rows > 0 {
		buf.WriteString("\x1b[" + strconv.Itoa(b.rows) + "A\r\x1b[J")
	}
	buf.WriteString(text)
	b.rows = 0
	for _, l := range b.lines {
		buf.WriteString(l.text)
		buf.WriteByte('\n')
		b.rows += screenRows(l.text, width)
	}
}

// screenRows is how many rows a line of text takes on a terminal width
// columns wide (wide East Asian characters take two columns, combining
// marks none).
func screenRows(text string, width int) int {
	if width <= 0 {
		width = 80
	}
	cols := 0
	for _, r := range text {
		cols += runeWidth(r)
	}
	return max(1, (cols+width-1)/width)
}

// runeWidth approximates the columns a rune takes on a terminal.
func runeWidth(r rune) int {
	switch {
	case unicode.Is(unicode.Mn, r), unicode.Is(unicode.Me, r):
		return 0
	case r >= 0x1100 && r <= 0x115F, r >= 0x2E80 && r <= 0xA4CF, r >= 0xAC00 && r <= 0xD7A3,
		r >= 0xF900 && r <= 0xFAFF, r >= 0xFE30 && r <= 0xFE4F, r >= 0xFF00 && r <= 0xFF60,
		r >= 0xFFE0 && r <= 0xFFE6, r >= 0x1F300 && r <= 0x1FAFF, r >= 0x20000 && r <= 0x3FFFD:
		return 2
	}
	return 1
}

// signal records that turn of conv completed (and every earlier one), after
// everything before it was written.
func (o *outbox) signal(conv string, turn uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.track || turn == 0 {
		return
	}
	if i := slices.Index(o.doneOrder, conv); i >= 0 {
		o.doneOrder = slices.Delete(o.doneOrder, i, i+1)
	}
	o.doneOrder = append(o.doneOrder, conv)
	if len(o.doneOrder) > maxDone {
		delete(o.done, o.doneOrder[0])
		o.doneOrder = o.doneOrder[1:]
	}
	o.done[conv] = max(o.done[conv], turn)
	if cw := o.waits[conv]; cw != nil && turn >= cw.want {
		close(cw.done)
		delete(o.waits, conv)
	}
}

// wait returns a channel closed when turn want of conv (or a later one)
// has completed and everything said before its completion has been
// written — closed already when it has. A completion of an earlier turn
// (told late, after the next line was sent) does not close it.
func (o *outbox) wait(conv string, want uint64) <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.done[conv] >= want {
		return closedChan()
	}
	cw := o.waits[conv]
	if cw == nil {
		cw = &convWait{done: make(chan struct{})}
		o.waits[conv] = cw
	}
	cw.want = want // one waiter at a time: the session's
	return cw.done
}

// release forgets the wait for conv, done or given up; the completion of
// a turn given up is still remembered when it comes, for a later wait.
func (o *outbox) release(conv string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.waits, conv)
}

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}
