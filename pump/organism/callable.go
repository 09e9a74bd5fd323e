package organism

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/xml-pipeline/xmlpipe/gen"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/fields"
)

// Callable organisms (seed 000 §15).
//
// A listener with a callable: declaration is offered as one tool: the
// organism registers a listener named <name>.call (config.CallName) whose
// payload is the declaration's parameters under its root tag
// (Listener.CallRoot) and whose description is the declaration's. A
// gateway exports that root like any other, so a federated peer imports
// the tool, sees its interface through meta introspection, and its agents
// call it as they call any tool. The call handler turns the call into the
// listener's task on a conversation of its own (own thread, own context),
// under the narrower of the caller's profile and the callable's own
// (config.CallProfile: the listener and its requires:), waits for the
// conversation's answer and returns it as the call's answer.
//
// A call lasts as long as its callee's conversation — several model turns,
// slow tools, calls waiting for a human — so the <name>.call listener has
// no handler timeout of its own (the callee's bounds one of its turns, not
// the call): the call is bounded by callable.timeout (callTimeout), and
// when that passes its conversation is killed. A halt does not cancel a
// running call (pump.Listener.WaitsOnConversations): it stops the callee's
// conversation where it runs, and the call waits for its answer after
// resume instead of beginning it again.

// ErrCallFailed is the error of a call whose callee conversation failed or
// ended without an answer.
var ErrCallFailed = errors.New("callable: the call got no answer")

// ErrCallTimeout is the error of a call whose callee conversation did not
// answer within the callable's timeout (callable.timeout): the
// conversation was killed.
var ErrCallTimeout = errors.New("callable: the call took longer than its timeout")

// ErrCallBeyondProfile is the error of a call that would reach, under the
// profile definitions and listeners in force now, a listener its caller's
// conversation may not reach: a reload widened the caller's profile (or
// added a listener it matches) after its conversation began, and that
// conversation keeps the table it began with (seed 000 §8.5: no runtime
// change of a thread's dispatch table).
var ErrCallBeyondProfile = errors.New("callable: the call would reach beyond its caller's profile")

// callTurnMargin is what the default call timeout of an agent whose calls
// may wait for a human adds to that wait: the agent's turn after the
// decision (pump.DefaultAgentTimeout).
const callTurnMargin = pump.DefaultAgentTimeout

// callTimeout bounds one call of callable listener lc, configured in cfg:
// its callable.timeout, else config.DefaultCallTimeout — raised, for an
// agent whose calls (or its peer agents', at any depth) may wait for a
// human, to the longest such wait (Governance.abandonAfter) and one more
// turn.
func callTimeout(g *Governance, cfg *config.Organism, lc config.Listener) time.Duration {
	if lc.Callable.Timeout > 0 {
		return lc.Callable.Timeout.D()
	}
	d := config.DefaultCallTimeout
	if lc.Agent && g != nil {
		if wait := g.abandonAfter(cfg, lc); wait > 0 {
			d = max(d, wait+callTurnMargin)
		}
	}
	return d
}

// callSender is the external sender name of the conversations calls begin
// (a name no listener can have: listener names hold no ':').
func callSender(listener string) string { return callSenderPrefix + strings.ToLower(listener) }

// callSenderPrefix begins the name of every callSender.
const callSenderPrefix = "call:"

// isCallSender reports whether from is the sender of a call's conversation
// (callSender).
func isCallSender(from string) bool { return strings.HasPrefix(from, callSenderPrefix) }

// callParams is a callable's parameters as a payload contract.
func callParams(lc config.Listener) fields.List {
	f := fields.List{Root: lc.CallRoot()}
	for _, p := range lc.Callable.Parameters {
		f.Fields = append(f.Fields, fields.Field{Name: p.Name, Type: p.Type, Doc: p.Description, Optional: !p.Required,
			Enum: p.Enum})
	}
	return f
}

// callListener builds the <name>.call listener of callable listener lc,
// whose calls timeout bounds (callTimeout). It has no handler timeout: a
// call waits on its callee's whole conversation, which timeout bounds.
func callListener(p *pump.Pump, lc config.Listener, timeout time.Duration, log *slog.Logger) (pump.Listener, error) {
	pt, err := callParams(lc).PayloadType(nil)
	if err != nil {
		return pump.Listener{}, fmt.Errorf("callable: %w", err)
	}
	c := &caller{p: p, pt: pt, target: lc.Name, profile: config.CallProfile(lc.Name), timeout: timeout, log: log}
	return pump.Listener{Name: config.CallName(lc.Name), Description: lc.Callable.Description, Payload: pt, Handler: c,
		Remote: true, WaitsOnConversations: true, Workers: lc.MaxConcurrent, Timeout: -1}, nil
}

// caller is the handler of a <name>.call listener.
type caller struct {
	p       *pump.Pump
	pt      *xmlpipe.PayloadType
	target  string
	profile string // config.CallProfile(target)
	// timeout bounds one call (callTimeout).
	timeout time.Duration
	log     *slog.Logger
}

// Handle runs one call: the target's task on a conversation of its own,
// under the call's thread profile narrowed by the callable's, and answers
// with the conversation's answer.
func (c *caller) Handle(ctx context.Context, payload any, md xmlpipe.Metadata) (xmlpipe.Response, error) {
	body, err := c.pt.AppendPayload(nil, payload)
	if err != nil {
		return nil, fmt.Errorf("callable %s: %w", c.target, err)
	}
	args, err := callArgs(body)
	if err != nil {
		return nil, fmt.Errorf("callable %s: %w", c.target, err)
	}
	l, ok := c.p.Lookup(c.target)
	if !ok || l.Payload == nil {
		return nil, fmt.Errorf("%w: %s is not loaded", ErrCallFailed, c.target)
	}
	task, err := taskFor(l, args)
	if err != nil {
		return nil, fmt.Errorf("callable %s: %w", c.target, err)
	}
	caller := ""
	if md.Profile != nil {
		caller = md.Profile.Name()
	}
	profile := registry.NarrowProfile(caller, c.profile)
	if wider := c.beyond(md.Profile, profile); wider != "" {
		// The listener stays unnamed for the caller: outside its profile,
		// it does not exist for it.
		c.log.Warn("call refused: its callee would reach what the caller's conversation may not (its table changed since)",
			"listener", c.target, "thread", md.ThreadID, "from", md.From, "profile", caller, "would_reach", wider)
		return nil, fmt.Errorf("%w %s: the organism's profiles or listeners changed since the calling conversation "+
			"began (a reload); call again from a new conversation", ErrCallBeyondProfile, caller)
	}
	c.log.Debug("call", "listener", c.target, "thread", md.ThreadID, "from", md.From, "profile", profile,
		"timeout", c.timeout)
	ctx, cancel := context.WithTimeoutCause(ctx, c.timeout, fmt.Errorf("%w: %s did not answer within %s (callable.timeout); "+
		"its conversation was killed", ErrCallTimeout, c.target, c.timeout))
	defer cancel()
	// The callee's conversation counts on from the caller's hops, so
	// callables that call each other meet max_chain_depth as one chain.
	hops, _ := c.p.ChainHops(md.ThreadID)
	ev, err := c.p.AskXML(pump.WithHops(pump.WithProfile(ctx, profile), hops), callSender(c.target), c.target, task)
	if err != nil {
		var ae *pump.AskError
		var f *failure.Failure
		switch {
		case errors.Is(err, ErrCallTimeout):
			c.log.Warn("call timed out, its conversation killed", "listener", c.target, "thread", md.ThreadID,
				"from", md.From, "timeout", c.timeout)
			return nil, context.Cause(ctx)
		case errors.As(err, &ae), errors.As(err, &f), errors.Is(err, pump.ErrNoAnswer):
			return nil, fmt.Errorf("%w: %w", ErrCallFailed, err)
		}
		return nil, fmt.Errorf("callable %s: %w", c.target, err)
	}
	if ev.Payload == nil {
		return nil, fmt.Errorf("%w: %s answered nothing decodable", ErrCallFailed, c.target)
	}
	return xmlpipe.Respond(ev.Payload), nil
}

// callArg is one argument of a call: its element name and text.
type callArg struct{ name, value string }

// callArgs reads the arguments of a call payload (a root whose children
// are simple elements), in document order.
func callArgs(body []byte) ([]callArg, error) {
	d := xml.NewDecoder(bytes.NewReader(body))
	var out []callArg
	depth := 0
	var cur *callArg
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("call payload: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			if depth == 2 {
				out = append(out, callArg{name: t.Name.Local})
				cur = &out[len(out)-1]
			}
		case xml.EndElement:
			depth--
			if depth < 2 {
				cur = nil
			}
		case xml.CharData:
			if cur != nil {
				cur.value += string(t)
			}
		}
	}
}

// taskFor is the payload the call's arguments become for listener l: an
// agent's task text ("name: value" lines), or l's own payload with the
// arguments as its children (its schema then decides).
func taskFor(l pump.Listener, args []callArg) ([]byte, error) {
	if l.Agent {
		var text strings.Builder
		for _, a := range args {
			fmt.Fprintf(&text, "%s: %s\n", a.name, a.value)
		}
		args = []callArg{{name: "Text", value: strings.TrimSpace(text.String())}}
	}
	if !l.Agent && l.Payload.Model() != nil {
		args = inFieldOrder(l.Payload.Model(), args)
	}
	for _, a := range args {
		if !gen.IsNCName(a.name) {
			return nil, fmt.Errorf("call argument %q is not an element name", a.name)
		}
	}
	var b bytes.Buffer
	root := l.Payload.Name()
	b.WriteString("<" + root + ` xmlns="`)
	if err := xml.EscapeText(&b, []byte(l.Payload.Namespace())); err != nil {
		return nil, err
	}
	b.WriteString(`">`)
	for _, a := range args {
		b.WriteString("<" + a.name + ">")
		if err := xml.EscapeText(&b, []byte(a.value)); err != nil {
			return nil, err
		}
		b.WriteString("</" + a.name + ">")
	}
	b.WriteString("</" + root + ">")
	return b.Bytes(), nil
}

// inFieldOrder is args in the order model's elements take them (its
// schema's sequence), whatever order the parameters were declared in;
// arguments no element takes come last, for the schema to refuse.
func inFieldOrder(model *gen.Type, args []callArg) []callArg {
	rank := func(name string) int {
		for i, f := range model.Fields {
			if !f.Attr && (f.Name == name && f.Wrapper == "" || f.Wrapper == name) {
				return i
			}
		}
		return len(model.Fields)
	}
	out := slices.Clone(args)
	slices.SortStableFunc(out, func(a, b callArg) int { return rank(a.name) - rank(b.name) })
	return out
}

// callPos is where the payload of callable listener i is declared, for
// the errors of its <name>.call listener (a root tag another listener
// already handles): its callable.root, else its callable: block.
func callPos(cfg *config.Organism, i int) string {
	return cfg.Pos(fmt.Sprintf("listeners[%d].callable.root", i)).String()
}

// registerCall registers the <name>.call listener of lc, when lc is
// callable, and records it among u's names (a reload replaces and removes
// it with lc's own).
func registerCall(p *pump.Pump, lc config.Listener, timeout time.Duration, u *unit, log *slog.Logger) error {
	if lc.Callable.IsZero() {
		return nil
	}
	l, err := callListener(p, lc, timeout, log)
	if err == nil {
		err = p.Register(l)
	}
	if err != nil {
		return err
	}
	u.names = append(u.names, l.Name)
	return nil
}

// beyond names what the callee's conversation would reach under profile
// — resolved in the current routing table, as the new conversation will
// be — that the caller's profile, resolved in the table its own
// conversation routes within, does not: an address a term of the
// caller's profile now allows it to dial (pump.Pump.NetworkWidened), or
// a listener; "" when there is none or the caller has no profile. A
// reload that widened the caller's profile after its conversation began
// would otherwise widen it for its calls.
func (c *caller) beyond(callerProfile xmlpipe.Profile, profile string) string {
	if callerProfile == nil {
		return ""
	}
	if term := c.p.NetworkWidened(callerProfile); term != "" {
		return "the network of profile " + term
	}
	for _, l := range c.p.Listeners() {
		if c.p.ProfileReaches(profile, l.Name) && !callerProfile.Reaches(l.Name) {
			return l.Name
		}
	}
	return ""
}
