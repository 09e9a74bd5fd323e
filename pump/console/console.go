package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/term"

	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// Console is the line console over an organism.Backend. Run (or RunTerminal, RunStdio)
// serves one session at a time.
type Console struct {
	b     organism.Backend
	cfg   Config
	out   *outbox
	convs *conversations
	live  *liveStreams
	sess  sessionState
	// width is the terminal's width in columns (0: unknown, taken as 80).
	width atomic.Int64
}

// sessionState is the state of the session being served.
type sessionState struct {
	// terminal: the session runs on a terminal (streamed text is shown
	// as it arrives); read by receive on the organism's goroutines.
	terminal atomic.Bool
	// setPrompt changes the terminal's prompt (nil on a pipe).
	setPrompt func(string)

	mu sync.Mutex
	// wait: a piped session, which waits for its conversations.
	wait bool
	// interactive: a piped session whose output is a terminal (someone
	// watches it): the wait at its end is announced.
	interactive bool
	// running are the conversations a piped session still waits for.
	running []started
}

// track adds conv to the conversations the piped session waits for.
func (s *sessionState) track(st started) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running = append(s.running, st)
}

// take removes conv from the conversations the session waits for and
// returns when it began (false when it is not waited for).
func (s *sessionState) take(conv string) (started, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, st := range s.running {
		if st.conv == conv {
			s.running = append(s.running[:i], s.running[i+1:]...)
			return st, true
		}
	}
	return started{}, false
}

// drain returns and forgets every conversation the session waits for.
func (s *sessionState) drain() []started {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.running
	s.running = nil
	return out
}

// New returns a console over b.
func New(b organism.Backend, cfg Config) (*Console, error) {
	if b == nil {
		return nil, fmt.Errorf("%w: no backend", ErrConfig)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Console{b: b, cfg: cfg.WithDefaults(), out: newOutbox(), convs: newConversations()}
	c.live = newLiveStreams(c.out)
	return c, nil
}

// Write shows p (e.g. log lines) on the console without disturbing the
// prompt; it never blocks on the terminal. Lines written while no session
// runs are shown when the next one starts.
func (c *Console) Write(p []byte) (int, error) {
	c.out.line(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// Run serves a session that reads plain lines from in and writes to out.
// After each @ line it waits (up to Config.LineWait, and not once the
// conversation waits for a human) for the conversation to complete, so quick answers precede the next command's output; slower
// conversations go on while the next lines run. At /quit or the end of
// input it waits for every conversation it started to complete (each up to
// Config.ReplyTimeout after it began), so no answer is lost. Agents' text
// is not shown as it streams: each answer prints once, whole. When out is
// a terminal (an *os.File) that wait is announced in one line. It returns
// nil then, ErrStillRunning when some did not complete in time, ctx.Err()
// when ctx ends first.
func (c *Console) Run(ctx context.Context, in io.Reader, out io.Writer) error {
	f, ok := out.(*os.File)
	return c.runPiped(ctx, in, out, ok && term.IsTerminal(int(f.Fd())))
}

// runPiped is Run; interactive says out is a terminal, where the wait for
// the conversations still running at the end is announced (a transcript
// written elsewhere stays as it was).
func (c *Console) runPiped(ctx context.Context, in io.Reader, out io.Writer, interactive bool) error {
	c.sess.mu.Lock()
	c.sess.interactive = interactive
	c.sess.mu.Unlock()
	return c.serve(ctx, out, false, newLineReader(in).next)
}

// ErrStillRunning: a piped session ended while conversations it started
// were still running — after Config.ReplyTimeout, or waiting for a human
// nobody is left to be — and their answers were not printed. The error
// names each with why.
var ErrStillRunning = errors.New("console: conversations still running")

// ErrOutputClosed: a write to the session's output failed (the reader of
// a pipe went away): the session ends; nothing more can be shown.
var ErrOutputClosed = errors.New("console: output closed")

// started is a conversation a piped session waits for before it ends.
type started struct {
	conv string
	at   time.Time
}

// serve runs a session: readLine gives the next input line (io.EOF ends the
// session); terminal says whether out is a terminal (x/term), which shows
// streamed text as it arrives and does not wait for conversations; a piped
// session waits for them.
func (c *Console) serve(ctx context.Context, out io.Writer, terminal bool, readLine func() (string, error)) (err error) {
	wait := !terminal
	c.sess.mu.Lock()
	c.sess.wait, c.sess.running = wait, nil
	c.sess.mu.Unlock()
	defer func() {
		c.sess.mu.Lock()
		c.sess.interactive = false
		c.sess.mu.Unlock()
	}()
	c.sess.terminal.Store(terminal)
	cancel := c.b.Subscribe(c.receive)
	defer cancel()
	if g, ok := c.b.(organism.Governor); ok {
		defer g.WatchGovernance(func(line string) { c.say(line) })()
	}
	// Nobody reads the output any more (a closed pipe): the session ends,
	// with that error.
	broken := func() error { return fmt.Errorf("%w: %w", ErrOutputClosed, c.out.writeErr) }
	stop := c.out.start(out, wait, terminal, c.columns)
	defer func() {
		stop() // writes what is queued: a write may fail only now
		select {
		case <-c.out.failed():
			if err == nil || errors.Is(err, ErrStillRunning) {
				err = broken()
			}
		default:
		}
	}()
	c.banner(ctx)

	type read struct {
		line string
		err  error
	}
	want := make(chan struct{})
	got := make(chan read, 1) // buffered: the reader never blocks after the session ends
	defer close(want)
	go func() {
		for range want {
			line, err := readLine()
			got <- read{line, err}
		}
	}()
	finish := func() error {
		if !wait {
			c.goodbye(ctx)
			return nil
		}
		running := c.sess.drain()
		c.announceWait(running)
		return c.awaitAll(ctx, running)
	}
	for {
		select {
		case want <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		case <-c.out.failed():
			return broken()
		}
		var r read
		select {
		case r = <-got:
		case <-ctx.Done():
			return ctx.Err()
		case <-c.out.failed():
			return broken()
		}
		if terminal {
			c.live.freeze() // the typed line moved the screen on: streamed text goes on below it
		}
		if r.err != nil && r.line == "" {
			if errors.Is(r.err, io.EOF) {
				return finish()
			}
			return fmt.Errorf("console: read: %w", r.err)
		}
		at := time.Now()
		quit, conv := c.Exec(ctx, r.line)
		if quit {
			return finish()
		}
		if c.sess.setPrompt != nil {
			c.sess.setPrompt(c.convs.prompt(c.cfg.Prompt))
		}
		if wait && conv != "" && !c.awaitLine(ctx, conv) {
			c.sess.track(started{conv: conv, at: at})
			if c.cfg.Verbose {
				c.say(fmt.Sprintf("[thread %s still running after %v; reading on]", short(conv), c.cfg.LineWait))
			}
		}
	}
}

// awaitLine waits after an @ line for its conversation, at most
// Config.LineWait and no longer than until it waits for a human (whose
// /approve may be the next line) or on an unreachable peer organism. It
// reports whether it completed.
func (c *Console) awaitLine(ctx context.Context, conv string) bool {
	done, _, _ := c.awaitLeaving(ctx, conv, c.cfg.LineWait)
	return done
}

// columns is the terminal's width (80 when unknown).
func (c *Console) columns() int {
	if w := c.width.Load(); w > 0 {
		return int(w)
	}
	return 80
}

// await waits at most d for conversation conv to complete (and what it said
// before to be written). It reports whether it did; if not, conv stays
// awaited (awaitAll finishes the wait).
func (c *Console) await(ctx context.Context, conv string, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.out.wait(conv, c.convs.turnOf(conv)):
		c.out.release(conv)
		return true
	case <-ctx.Done():
		c.out.release(conv)
		return false
	case <-t.C:
		return false
	}
}

// awaitAll waits for each running conversation until Config.ReplyTimeout
// after it began, or until it waits for a human (nobody is left to decide);
// the ones still running then are named.
func (c *Console) awaitAll(ctx context.Context, running []started) error {
	var late []string
	for _, s := range running {
		done, approval, peer := c.awaitLeaving(ctx, s.conv, time.Until(s.at.Add(c.cfg.ReplyTimeout)))
		if done {
			continue
		}
		c.out.release(s.conv)
		if err := ctx.Err(); err != nil {
			return err
		}
		if peer != "" {
			// Its call goes on only once the peer is back: waiting would
			// hold the session until its call_timeout.
			late = append(late, fmt.Sprintf("%s (waits on gateway %s, unreachable)", short(s.conv), peer))
			c.say(fmt.Sprintf("note: thread %s waits on gateway %s, which is unreachable; not waiting for it "+
				"(a durable organism keeps the call for its next start)", short(s.conv), peer))
			continue
		}
		if approval != "" {
			// Nobody is left to decide: the input has ended. It was not
			// waited for, so the error must not say it ran ReplyTimeout.
			late = append(late, fmt.Sprintf("%s (waits for a human: approval %s)", short(s.conv), approval))
			c.say(fmt.Sprintf("note: thread %s waits for a human (approval %s); not waiting for it", short(s.conv), approval))
			continue
		}
		late = append(late, fmt.Sprintf("%s (no answer after %v)", short(s.conv), c.cfg.ReplyTimeout))
		c.say(fmt.Sprintf("note: thread %s still running after %v; not waiting longer", short(s.conv), c.cfg.ReplyTimeout))
	}
	if len(late) > 0 {
		return fmt.Errorf("%w: %s", ErrStillRunning, strings.Join(late, ", "))
	}
	return nil
}

// banner greets the user once per session.
func (c *Console) banner(ctx context.Context) {
	name := "?"
	if st, err := c.b.Status(ctx); err == nil {
		name = st.Organism
	} else {
		c.say("Error: " + err.Error())
	}
	c.say("xmlpipe console — organism "+name, "Type /help for commands, @listener message to chat")
	if c.cfg.NoLLM {
		c.say(NoLLMNote)
	}
}

// receive renders what the organism says (called on its goroutines). On a
// terminal the text an agent streams in the console's own conversations
// shows as it arrives (liveStreams), and its answer — and its interim text,
// a printed line — then adds only what the stream did not show; on a pipe
// streamed text is not shown and every answer prints once, whole.
func (c *Console) receive(o organism.Output) {
	switch o.Kind {
	case organism.OutputPrint, organism.OutputReply, organism.OutputHuh:
		c.convs.answered(o.Conversation)
	}
	switch o.Kind {
	case organism.OutputPrint:
		if c.sess.terminal.Load() {
			// An agent's interim text (a turn its loop control continued)
			// adds only what its stream did not show.
			c.live.reply(o.Conversation, o.From, o.Text)
			return
		}
		c.say(fmt.Sprintf("[%s] %s", o.From, o.Text))
	case organism.OutputReply:
		if c.sess.terminal.Load() {
			c.live.reply(o.Conversation, o.From, o.Text)
			return
		}
		c.say(fmt.Sprintf("[%s] %s", o.From, o.Text))
	case organism.OutputDelta:
		if c.sess.terminal.Load() && c.convs.isMine(o.Conversation) {
			c.live.delta(o.Conversation, o.From, o.Text, o.End)
		}
	case organism.OutputHuh:
		text := o.Text
		if o.Told != "" {
			text += ": " + o.Told // what the handler wrote for the user: why
		}
		c.huh(text, o.Diagnostics)
	case organism.OutputComplete:
		if o.Text == organism.CancelledReason {
			// Its answer was cancelled (elsewhere, when not told): the
			// conversation goes on, and the agent's next line continues it.
			if !c.convs.announced(o.Conversation) && c.convs.isMine(o.Conversation) {
				c.say(fmt.Sprintf("[%s] answer %s", c.convs.labelOf(o.Conversation, ""), cancelledNote))
			}
		} else if told, held := c.convs.endTold(o.Conversation, o.Text); o.Text != "" && c.convs.isMine(o.Conversation) && !told && !held {
			// Ended early (killed): no answer comes, and the next line to
			// its agent begins a new conversation rather than continue one
			// whose history ends in an unanswered question.
			c.say(c.convs.endedEarly(o.Conversation, o.Text))
		} else if target, ok := c.convs.unansweredBy(o.Conversation); ok && o.Text == "" {
			// Ended with nothing shown: the user would wait for an answer
			// that never comes.
			c.say(fmt.Sprintf("[%s] %s", target, endedUnansweredNote))
		}
		turn := c.convs.completed(o.Conversation)
		c.live.complete(o.Conversation)
		c.out.completed(o.Conversation, turn)
	}
}

// endedUnansweredNote follows the target of a line whose conversation
// ended with nothing shown of it: no reply, no printed line, no failure (an
// agent whose answer was refused again, a listener that sends nothing back).
const endedUnansweredNote = "(ended without an answer)"

// huh shows a failure: the canned text, and the diagnostics when verbose.
func (c *Console) huh(text string, diags []string) {
	lines := []string{"[huh] " + text}
	if c.cfg.Verbose {
		for _, d := range diags {
			lines = append(lines, "  "+d)
		}
	}
	c.say(lines...)
}

// say queues lines of output.
func (c *Console) say(lines ...string) {
	if len(lines) == 0 {
		return
	}
	// One item: an answer arriving meanwhile is written before or after
	// the block (a /status), never in the middle of it.
	c.out.line(strings.Join(lines, "\n"))
}

// short is the display form of a thread id.
func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
