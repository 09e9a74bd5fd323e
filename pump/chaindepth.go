package pump

import (
	"context"
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

// ErrBadHops refuses a message whose principal claims a negative hop
// count (Principal.Hops).
var ErrBadHops = errors.New("negative hop count")

// MaxChainDepth is the most hops one chain of forwards may make
// (Options.MaxChainDepth, its default applied).
func (p *Pump) MaxChainDepth() int { return p.opts.MaxChainDepth }

// ChainHops returns how many hops the chain of live thread has made — the
// listeners it reached here plus the hops its conversation made before it
// entered (Principal.Hops) — and whether thread is live. A federation
// gateway carries it with a call, so the callee counts on from it.
func (p *Pump) ChainHops(thread string) (int, bool) { return p.threads.Hops(thread) }

// WithHops has the conversation a message injected with ctx begins count
// on from hops hops made before it (see Principal.Hops, which wins when
// set): a listener that begins a conversation on behalf of its own — a
// callable's call — passes its chain's hops (ChainHops), so conversations
// that call each other in a cycle meet MaxChainDepth as one chain would.
func WithHops(ctx context.Context, hops int) context.Context {
	if hops == 0 {
		return ctx
	}
	return context.WithValue(ctx, hopsCtxKey{}, hops)
}

// hopsCtxKey carries WithHops's count.
type hopsCtxKey struct{}

// enteredHops is how many hops the conversation w begins made before it
// came: its principal's, else what its injector's context carries.
func enteredHops(w *work) int {
	if w.principal != nil && w.principal.Hops != 0 {
		return w.principal.Hops
	}
	if w.ctx != nil {
		if h, ok := w.ctx.Value(hopsCtxKey{}).(int); ok {
			return h
		}
	}
	return 0
}

// enteringTooDeep refuses a conversation whose sender says it made hops
// hops before it came (Principal.Hops): negative, or so many that its
// first hop here would take it past MaxChainDepth.
func (p *Pump) enteringTooDeep(hops int) error {
	switch {
	case hops < 0:
		return fmt.Errorf("%w: %w: %d", failure.ErrForbiddenSender, ErrBadHops, hops)
	case hops >= p.opts.MaxChainDepth:
		return fmt.Errorf("%w: %w: %d hops (it had made %d before it came)", failure.ErrHandler, ErrChainTooDeep,
			p.opts.MaxChainDepth, hops)
	}
	return nil
}

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
	if hops, ok := p.threads.Hops(d.thread); !ok || hops+1 <= p.opts.MaxChainDepth {
		return false // an unknown thread is extend's to report
	}
	last, depth := p.threads.Tail(d.thread, chainTailNames)
	if depth == 0 {
		return false // ended meanwhile: extend reports it
	}
	hops, _ := p.threads.Hops(d.thread)
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
		"listener", l.Name, "to", to, "hops", hops, "max_chain_depth", p.opts.MaxChainDepth,
		"chain", chain, "conversation_ended", !hears)
	if hears {
		var payload any = &xmlpipe.Huh{Error: text}
		if l.Agent {
			payload = &xmlpipe.SystemError{Code: "routing", Message: text, RetryAllowed: false}
		}
		about := d.about(ref)
		p.later(t, func() { p.sendErrorAbout(d.conv, d.tbl, l, d.thread, payload, d.depth, ref, about, err.Error(), err) })
		return true
	}
	p.deadLetterIn(t, d.conv, d.thread, l.Name, to, "", nil, err.Error()+"; the conversation was stopped")
	p.endTooDeep(t, l, d, root, text+" The conversation was stopped.", err)
	return true
}

// endTooDeep tells the outside party of d's conversation, stopped for its
// hop limit, why (a <huh> marked ChainTooDeep, its Cause cause, after what
// turn t emits) and frees its threads from root.
func (p *Pump) endTooDeep(t *turn, l *listener, d *delivery, root, text string, cause error) {
	origin, _ := p.threads.Origin(d.thread)
	p.later(t, func() {
		p.emitToConv(d.conv, Event{Kind: EventHuh, Time: p.opts.Clock(), Conversation: d.conv, Thread: root,
			From: "core", To: origin, Listener: l.Name, Payload: &xmlpipe.Huh{Error: text}, Error: text,
			Profile: d.prof.nameOf(), ChainTooDeep: true, Cause: cause})
	})
	if root != "" {
		p.endThread(root)
	}
}

// TooDeepError is a handler's error saying that a call it made was refused
// because the conversation's chain of forwards exceeded a hop limit: a
// federated call the peer organism refused for its max_chain_depth, or
// whose conversation there was stopped for it. It wraps ErrChainTooDeep.
// The pump treats it as it treats a forward it refuses itself: a sender
// that hears errors is told, any other's conversation is stopped and its
// outside party told Why.
type TooDeepError struct {
	// Why is the refusal's text, told as is.
	Why string
}

// Error returns Why.
func (e *TooDeepError) Error() string { return e.Why }

// Unwrap makes a TooDeepError an ErrChainTooDeep.
func (e *TooDeepError) Unwrap() error { return ErrChainTooDeep }

// stopTooDeep stops the conversation of d, whose handling by l failed with
// tooDeep, when sender (the listener that sent d) cannot hear of it: as
// chainTooDeep does, its threads are freed, the failure is a dead letter
// and its outside party gets a <huh> saying why. Without this, the <huh>
// would be dropped at the sender and the conversation end as if it had
// nothing to say — at every organism of a cycle between them. It reports
// whether it stopped it.
func (p *Pump) stopTooDeep(l *listener, d *delivery, sender *listener, tooDeep *TooDeepError) bool {
	if sender != nil && sender.errHandler != nil {
		return false
	}
	root := p.threads.Root(d.thread)
	p.chainsStopped.Add(1)
	p.log.Warn("chain too deep: conversation stopped", "conversation", d.conv, "thread", d.thread, "root", root,
		"listener", l.Name, "from", d.from, "max_chain_depth", p.opts.MaxChainDepth, "why", tooDeep.Why)
	p.deadLetter(d.conv, d.thread, d.from, l.Name, d.payloadName, nil, tooDeep.Why+"; the conversation was stopped")
	p.endTooDeep(nil, l, d, root, tooDeep.Why, tooDeep)
	return true
}
