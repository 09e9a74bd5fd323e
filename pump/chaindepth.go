package pump

import (
	"errors"
	"fmt"
	"strings"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
)

// DefaultMaxChainDepth is how many hops one chain of forwards may make
// unless Options say otherwise: far more than a pipeline of listeners or an
// agent's self-iteration (max_iterations, 25 by default: a hop each) takes,
// few enough that listeners forwarding to each other for ever are stopped
// within a fraction of a second and a few hundred thread rows.
const DefaultMaxChainDepth = 256

// ErrChainTooDeep is why a forward was refused: it would have made its
// conversation's chain of forwards deeper than Options.MaxChainDepth —
// typically listeners that Send to each other in a cycle.
var ErrChainTooDeep = errors.New("the conversation exceeded its hop limit")

// chainTailNames is how many of the listeners a refused chain reached last
// its refusal names.
const chainTailNames = 6

// chainHops is the hops a thread path of depth segments has made: the
// listeners it reached, [organism, origin, l1 … lk] → k.
func chainHops(depth int) int { return depth - 2 }

// chainTooDeep refuses the forward l, handling d, would send to to (with
// ref), as part of turn t (nil: none), when it would make d's chain deeper
// than MaxChainDepth hops. The depth is the thread registry's, which a
// restart restores, so a chain recovered in flight is held to it too.
//
// A sender that hears errors (an agent, a listener with an error handler)
// is told on its thread — a SystemError for an agent, a <huh> otherwise —
// and may still answer its caller; any other sender, or an error handler
// that forwards again, cannot stop the cycle, so the conversation ends: its
// threads are freed, the refusal is a dead letter and the conversation's
// outside party gets a <huh> saying why. It reports whether it refused.
func (p *Pump) chainTooDeep(t *turn, l *listener, d *delivery, to, ref string) bool {
	if depth := p.threads.Depth(d.thread); depth == 0 || chainHops(depth)+1 <= p.opts.MaxChainDepth {
		return false // an unknown thread is extend's to report
	}
	last, depth := p.threads.Tail(d.thread, chainTailNames)
	if depth == 0 {
		return false // ended meanwhile: extend reports it
	}
	p.chainsStopped.Add(1)
	p.failed.Add(1)
	if len(last) > 0 && depth > len(last) {
		last[0] = "…"
	}
	chain := strings.Join(append(last, to), " → ")
	err := fmt.Errorf("%w: %w: %d hops (%s)", failure.ErrHandler, ErrChainTooDeep, p.opts.MaxChainDepth, chain)
	text := fmt.Sprintf("The conversation exceeded %d hops (%s): the message from %s to %s was not sent.",
		p.opts.MaxChainDepth, chain, l.Name, to)
	root := p.threads.Root(d.thread)
	hears := l.errHandler != nil && d.errPayload == nil
	p.log.Warn("chain too deep: forward refused", "conversation", d.conv, "thread", d.thread, "root", root,
		"listener", l.Name, "to", to, "hops", chainHops(depth), "max_chain_depth", p.opts.MaxChainDepth,
		"chain", chain, "conversation_ended", !hears)
	if hears {
		var payload any = &xmlpipe.Huh{Error: text}
		if l.Agent {
			payload = &xmlpipe.SystemError{Code: "routing", Message: text, RetryAllowed: false}
		}
		about := d.about(ref)
		p.later(t, func() { p.sendErrorAbout(d.conv, d.tbl, l, d.thread, payload, d.depth, ref, about, err.Error()) })
		return true
	}
	text += " The conversation was stopped."
	p.deadLetterIn(t, d.conv, d.thread, l.Name, to, "", nil, err.Error()+"; the conversation was stopped")
	origin, _ := p.threads.Origin(d.thread)
	p.later(t, func() {
		p.emitToConv(d.conv, Event{Kind: EventHuh, Time: p.opts.Clock(), Conversation: d.conv, Thread: root,
			From: "core", To: origin, Listener: l.Name, Payload: &xmlpipe.Huh{Error: text}, Error: text,
			Profile: d.prof.nameOf()})
	})
	if root != "" {
		p.endThread(root)
	}
	return true
}
