package federation

import (
	"fmt"
	"time"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// noticeAfter is how long a call waits on a peer whose link is down before
// its caller is told so (Options.Notify): long enough for a link that is
// being made to come up, short enough that a user is not left guessing.
var noticeAfter = 2 * time.Second

// peerDown reports whether the gateway has no link to its peer, and since
// when.
func (g *gateway) peerDown() (bool, time.Time) {
	g.mu.Lock()
	linked := g.conn != nil
	g.mu.Unlock()
	state, since, _ := g.down.get(linked)
	return state != LinkUp, since
}

// peerName is how a caller on thread is told of the gateway's peer: its
// name ("organism b") for a caller confined to no profile, else only as
// the organism of listener — a profile shows listeners, never which
// organism serves them.
func (g *gateway) peerName(thread, listener string) string {
	if p := g.m.opts.Pump; p != nil {
		if prof, _ := p.Threads().Profile(thread); prof != "" {
			return "the organism serving " + listener
		}
	}
	return "organism " + g.name
}

// tellWaiting tells the caller of listener on md's thread, once, that its
// call waits on a peer that cannot be reached (Options.Notify): the call
// goes when the peer is back, or fails at its call_timeout. It reports
// whether it told.
func (g *gateway) tellWaiting(md xmlpipe.Metadata, listener string, timeout time.Duration) bool {
	notify := g.m.opts.Notify
	if notify == nil {
		return false
	}
	down, since := g.peerDown()
	if !down {
		return false
	}
	text := fmt.Sprintf("%s is unreachable (down for %s); the call waits for it: it goes on when it is back, "+
		"or fails at its call_timeout (%s)", g.peerName(md.ThreadID, listener),
		g.m.now().Sub(since).Round(time.Second), timeout)
	notify(md.ThreadID, listener, text)
	return true
}

// timedOut is the error of a call to listener whose call_timeout ended its
// wait: why, for its caller (an *xmlpipe.InputError the caller's client is
// told — its peer unreachable for how long, or silent), wrapped with what
// the operators read (ErrTimeout, the gateway).
func (g *gateway) timedOut(md xmlpipe.Metadata, listener string, timeout time.Duration) error {
	why := fmt.Sprintf("%s did not answer within the call_timeout (%s); the call was cancelled",
		g.peerName(md.ThreadID, listener), timeout)
	if down, since := g.peerDown(); down {
		why = fmt.Sprintf("%s unreachable for %s; the call waited its call_timeout (%s) and was cancelled",
			g.peerName(md.ThreadID, listener), g.m.now().Sub(since).Round(time.Second), timeout)
	}
	told := &xmlpipe.InputError{Err: fmt.Errorf("%s: %s", listener, why)}
	return fmt.Errorf("%w: gateway %s: %s after %s (its call_timeout; the call was cancelled): %w",
		ErrTimeout, g.name, listener, timeout, told)
}

// WaitsOnUnreachable reports the gateway whose unreachable peer a call
// made on a thread in conversation conv waits on (root names a thread's
// conversation): a client leaving need not wait for such a call, which
// goes on only once the peer is back.
func (m *Manager) WaitsOnUnreachable(conv string, root func(thread string) string) (gateway string, ok bool) {
	for _, g := range m.list() {
		g.mu.Lock()
		var waits bool
		for thread, lt := range g.byThread {
			if g.pending[lt] != nil && (thread == conv || root(thread) == conv) {
				waits = true
				break
			}
		}
		g.mu.Unlock()
		if !waits {
			continue
		}
		if down, _ := g.peerDown(); down {
			return g.name, true
		}
	}
	return "", false
}
