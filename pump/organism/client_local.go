package organism

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/codec"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// ConsoleFrom is the <from> of every message Local sends.
const ConsoleFrom = "console"

// Local is the in-process Backend over an *Organism.
type Local struct {
	org   *Organism
	clock func() time.Time
	out   OutputFeed
}

// Subscribe implements Feed.
func (l *Local) Subscribe(fn func(Output)) (cancel func()) { return l.out.Subscribe(fn) }

// NewLocal returns the in-process backend of o. Listener output reaches the
// console only when o's catalog.Env.Print calls the backend's Print; Assemble
// wires that while building the organism.
func NewLocal(o *Organism) *Local {
	return &Local{org: o, clock: time.Now}
}

// Assemble builds an organism with build (Load or New
// wrapped in a closure), with opts.Env.Print wired to the returned backend
// (and still calling a Print already set in opts).
func Assemble(opts Options, build func(Options) (*Organism, error)) (*Local, error) {
	l := &Local{clock: opts.Clock}
	if l.clock == nil {
		l.clock = time.Now
	}
	next := opts.Env.Print
	opts.Env.Print = func(thread, from, text string) {
		l.Print(thread, from, text)
		if next != nil {
			next(thread, from, text)
		}
	}
	if opts.Env.Stream == nil {
		opts.Env.Stream = l.Stream
	}
	o, err := build(opts)
	if err != nil {
		return nil, err
	}
	l.org = o
	return l, nil
}

// Organism returns the organism the backend drives.
func (l *Local) Organism() *Organism { return l.org }

// Print shows a listener's output on every subscribed console, tagged with
// the conversation the printing thread belongs to; it is a catalog.Env.Print.
// The line is shown once everything journaled before it is committed (in
// order with the pump's events), so no console hears of work a crash could
// still undo.
func (l *Local) Print(thread, from, text string) {
	if l.org == nil {
		l.out.Publish(Output{Kind: OutputPrint, Thread: thread, From: from, Text: text})
		return
	}
	var conv string
	if thread != "" {
		conv = l.org.Pump.Threads().Root(thread)
	}
	out := Output{Kind: OutputPrint, Conversation: conv, Thread: thread, From: from, Text: text}
	l.org.Pump.AfterDurable(func() { l.out.Publish(out) })
}

// Stream is a catalog.Env.Stream: it publishes each piece of an agent's
// streamed text at once, as an OutputDelta of the conversation the
// streaming thread belongs to — in order with the organism's events (after
// what was journaled before it is committed), never line-buffered. Pieces
// are not journaled: the agent's answer is.
func (l *Local) Stream(thread, agent, delta string, end bool) {
	conv, profile := thread, ""
	if l.org != nil && thread != "" {
		if root := l.org.Pump.Threads().Root(thread); root != "" {
			conv = root
		}
		profile, _ = l.org.Pump.Threads().Profile(thread)
	}
	out := Output{Kind: OutputDelta, Conversation: conv, Thread: thread, From: agent, Text: delta, End: end,
		Profile: profile}
	if l.org == nil {
		l.out.Publish(out)
		return
	}
	l.org.Pump.AfterDurable(func() { l.out.Publish(out) })
}

// Send builds the target's payload — from the text (NewPayload), or by
// decoding a JSON object (codec.AppendJSON, names matched loosely as the
// REST API does) or XML string — and sends it from "console" on m.Thread
// (a new conversation when "" or unknown, else its continuation). A
// message refused at ingress is a *Rejection, one continuing a killed
// conversation an error wrapping ErrConversationKilled.
func (l *Local) Send(ctx context.Context, m Message) (string, error) {
	p := l.org.Pump
	ls, ok := p.Lookup(m.Target)
	if !ok {
		return "", fmt.Errorf("%w: %s", ErrUnknownListener, m.Target)
	}
	var v any
	if len(m.Payload) > 0 {
		b, err := payloadXML(ls.Payload, m.Payload)
		if err == nil {
			v, err = ls.Payload.Decode(b)
		}
		if err != nil {
			return "", fmt.Errorf("%w for %s: %w", ErrBadPayload, ls.Name, err)
		}
	} else {
		var err error
		if v, err = NewPayload(ls.Payload.GoType(), m.Text); err != nil {
			return "", fmt.Errorf("%s: %w", ls.Name, err)
		}
	}
	thread := m.Thread
	if thread == "" {
		thread = stage.NewThreadID()
	} else if !stage.IsThreadID(thread) {
		return "", fmt.Errorf("console: thread %q is not a thread id", thread)
	}
	var got string
	body, err := ls.Payload.AppendPayload(nil, v)
	if err == nil {
		got, err = p.SendEnvelope(ctx, pump.Envelope{From: ConsoleFrom, To: ls.Name, Thread: thread, Payload: body},
			pump.OutletFunc(l.deliver))
	}
	if errors.Is(err, pump.ErrContinueKilled) {
		return "", fmt.Errorf("%w: %s: start a new one", ErrConversationKilled, thread)
	}
	if f, ok := errors.AsType[*failure.Failure](err); ok {
		r := &Rejection{Huh: f.Canned()}
		for _, d := range f.Diagnostics {
			r.Diagnostics = append(r.Diagnostics, d.String())
		}
		return "", r
	}
	return got, err
}

// payloadXML is the payload element a JSON payload describes.
func payloadXML(pt *xmlpipe.PayloadType, payload json.RawMessage) ([]byte, error) {
	var text string
	if json.Unmarshal(payload, &text) == nil {
		return []byte(text), nil
	}
	return codec.AppendJSON(nil, pt.Model(), payload, codec.JSONOptions{FoldNames: true})
}

// deliver turns the events of the console's conversations into Output.
func (l *Local) deliver(e pump.Event) {
	switch e.Kind {
	case pump.EventHuh:
		if e.Conversation == "" {
			return // refused at ingress: Send returns it as a *Rejection
		}
		out := Output{Kind: OutputHuh, Conversation: e.Conversation, From: e.From, Text: e.Error,
			Diagnostics: e.Diagnostics}
		if ie, ok := errors.AsType[*xmlpipe.InputError](e.Cause); ok && e.To == ConsoleFrom {
			out.Told = ie.Error()
		}
		l.out.Publish(out)
	case pump.EventReply:
		l.out.Publish(Output{Kind: OutputReply, Conversation: e.Conversation, From: e.From, Text: replyText(e)})
	case pump.EventComplete:
		l.out.Publish(Output{Kind: OutputComplete, Conversation: e.Conversation, Text: e.Error})
	}
}

// replyText is a reply's text when its text field carries all the payload
// holds (stage.PayloadText), else its payload XML without the xmlns="" it
// has only inside an envelope, as the bus gives it to a remote console (a
// refusal in one line): a Weather's City beside its TempC, or a tool
// result whose Text is empty but whose Error says why, shows whole.
func replyText(e pump.Event) string {
	if r, ok := e.Payload.(*xmlpipe.Refusal); ok {
		return r.Summary()
	}
	if s, ok := PayloadText(e.Payload); ok {
		return s
	}
	if e.Payload != nil {
		if pt, err := xmlpipe.NewPayloadType(reflect.TypeOf(e.Payload)); err == nil {
			if b, err := pt.AppendPayload(nil, e.Payload); err == nil {
				return string(barePayload(b))
			}
		}
	}
	return "<" + e.PayloadName + ">"
}

// Listeners describes every listener, system ones first.
func (l *Local) Listeners(context.Context) ([]ListenerInfo, error) {
	infos := l.org.Pump.Listeners()
	out := make([]ListenerInfo, len(infos))
	for i, li := range infos {
		out[i] = ListenerInfo{Name: li.Name, Description: li.Description, Agent: li.Agent, Broadcast: li.Broadcast,
			RootTag: li.RootTag}
	}
	return out, nil
}

// Status summarises the pump and the context buffer; only the threads of
// running conversations count as live.
func (l *Local) Status(context.Context) (Status, error) {
	p := l.org.Pump
	st := p.Stats()
	threads := p.Threads()
	active := 0
	for _, r := range threads.Records() {
		if p.Running(threads.Root(r.ID)) {
			active++
		}
	}
	halted := ""
	if scope, ok := p.Halted(); ok {
		halted = scope.String()
	}
	return Status{
		Organism:        p.Organism(),
		Uptime:          st.Uptime,
		Listeners:       len(p.Listeners()),
		Threads:         active,
		Idle:            max(st.Threads-active, 0),
		Slots:           p.Context().Stats().TotalSlots,
		Processed:       st.Processed,
		Failed:          st.Failed,
		InFlight:        st.InFlight,
		Gateways:        gatewayLines(l.org),
		Halted:          halted,
		HaltedListeners: p.HaltedListeners(),
	}, nil
}

// gatewayLines describes the organism's gateways for /status.
func gatewayLines(o *Organism) []string {
	if o.Federation == nil {
		return nil
	}
	var out []string
	for _, g := range o.Federation.Status() {
		state := "disconnected"
		if g.LastError != "" {
			state += " (" + g.LastError + ")"
		}
		if g.Connected {
			state = "connected to " + g.Peer
		}
		line := fmt.Sprintf("%s: %s, %d queued, %d open calls", g.Name, state, g.Queued, g.Open)
		if len(g.Imports) > 0 {
			line += "; imports " + strings.Join(g.Imports, ", ")
		}
		if len(g.Exports) > 0 {
			line += "; exports " + strings.Join(g.Exports, ", ")
		}
		out = append(out, line)
	}
	return out
}

// Threads lists the live threads, oldest first. For a durable organism the
// journal's recent conversations that are no longer live come first, marked
// Ended, so history from before a restart shows too.
func (l *Local) Threads(context.Context) ([]Thread, error) {
	live := l.liveThreads()
	if s := l.org.Store(); s != nil {
		return journalThreads(s.Reader, live, l.clock())
	}
	return live, nil
}

// liveThreads lists the thread registry, oldest first.
func (l *Local) liveThreads() []Thread {
	p := l.org.Pump
	recs := p.Threads().Records()
	slices.SortStableFunc(recs, func(a, b registry.ThreadRecord) int {
		return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(len(a.Path), len(b.Path)), cmp.Compare(a.ID, b.ID))
	})
	now := l.clock()
	out := make([]Thread, 0, len(recs))
	for _, r := range recs {
		t := Thread{ID: r.ID, Depth: len(r.Path), Idle: max(now.Sub(r.Touched), 0)}
		if tc, ok := p.Context().Thread(r.ID); ok {
			t.Slots = tc.Len()
			if last, ok := tc.At(-1); ok {
				t.LastFrom, t.LastTo = last.From, last.To
			}
		}
		out = append(out, t)
	}
	return out
}

// Monitor returns the history of the threads whose id starts with prefix
// (case-insensitive), or of every thread with history for "*". For a
// durable organism the history comes from the journal — a conversation id
// shows the whole conversation, and ended conversations (before a restart
// too) are found — with the context buffer as the fallback for live
// threads the journal does not hold.
func (l *Local) Monitor(_ context.Context, prefix string) ([]History, error) {
	live := l.liveThreads()
	var (
		out     []History
		covered map[string]bool
	)
	if s := l.org.Store(); s != nil {
		var err error
		if out, err = journalMonitor(s.Reader, prefix); err != nil {
			return nil, err
		}
		covered = make(map[string]bool, len(out))
		for _, h := range out {
			covered[h.ID] = true
		}
	}
	all := prefix == "*"
	prefix = strings.ToLower(prefix)
	threads := l.org.Pump.Threads()
	for _, t := range live {
		switch {
		case covered[t.ID]:
			continue
		case all && covered[threads.Root(t.ID)]:
			continue // shown with its conversation
		case !all && !strings.HasPrefix(t.ID, prefix):
			continue
		}
		h := History{ID: t.ID}
		if tc, ok := l.org.Pump.Context().Thread(t.ID); ok {
			for _, s := range tc.Slots() {
				h.Slots = append(h.Slots, Slot{From: s.From, To: s.To, PayloadType: s.PayloadType, Payload: string(s.Raw),
					Time: s.Time})
			}
		}
		if all && len(h.Slots) == 0 {
			continue
		}
		out = append(out, h)
	}
	return out, nil
}
