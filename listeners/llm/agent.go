package llm

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// Chatter sends one chat request; *Router is one.
type Chatter interface {
	Chat(ctx context.Context, r Request) (Reply, error)
}

// UsageSource reports the tokens spent so far; *Router is one.
type UsageSource interface {
	AgentUsage(agent string) Usage
	ThreadUsage(thread string) Usage
}

// Threads is what the agent needs of the thread registry: a thread's
// ancestry and its caller (*registry.Threads is one).
type Threads interface {
	Ancestors(id string) []string
	Caller(id string) (caller, replyThread string, err error)
}

// Defaults of the agent loop's bounds.
const (
	// DefaultMaxIterations bounds an agent's turns on one thread.
	DefaultMaxIterations = 25
	// DefaultRepeatLimit is the progress guard's N: the same normalised
	// output this many times in a row halts the thread.
	DefaultRepeatLimit = 3
	// MaxHistoryText caps the text one history message contributes to a
	// request; longer messages (a huge model reply, a huge payload) are cut
	// with a note, so one bad turn cannot make every later request too large.
	MaxHistoryText = 16 << 10
)

// Agent is the agent loop as a listener handler. Each message it receives
// (and each <huh> or SystemError, through HandleError) is one turn: the
// constitution, the prompt, the usage instructions, the thread's history
// and the message go to the model; a reply holding XML is handed to the pump
// as Raw (every element becomes a message, peers enforced), a reply without
// XML is the agent's answer to its caller.
type Agent struct {
	// Name is the agent's listener name.
	Name string
	// Prompt is the agent's resolved system prompt.
	Prompt string
	// Constitution is the agent's constitution text, the first system
	// message of every request ("": Constitution(); the organism composes
	// it from its constitution documents, package pump/guardian).
	Constitution string
	// Model, MaxTokens and Temperature shape each request.
	Model       string
	MaxTokens   int
	Temperature *float64
	// MaxIterations bounds the agent's turns per thread (0: default 25).
	MaxIterations int
	// RepeatLimit is the progress guard's N (0: default 3).
	RepeatLimit int
	// Budget is checked before each call.
	Budget Budget
	// LLM sends the requests; Usage feeds the budgets (both usually the Router).
	LLM   Chatter
	Usage UsageSource
	// History is the context buffer holding the threads' messages.
	History *registry.ContextBuffer
	// Threads gives thread ancestry and callers.
	Threads Threads
	// Lookup returns a registered listener's payload type (to answer a
	// listener caller in its own payload); nil answers with Answer.
	Lookup func(name string) (*xmlpipe.PayloadType, bool)
	// OnDelta, when set, streams the model's prose as it arrives: each
	// delta up to the first XML element (messages to peers are not shown),
	// then end=true once the turn's reply is complete or failed.
	OnDelta func(agent, thread, delta string, end bool)
	// Logger receives warnings (default slog.Default()).
	Logger *slog.Logger

	warned atomic.Bool
}

// Handle implements xmlpipe.Handler: one turn for a message. An answer the
// agent gave itself on a self-iteration thread is passed on to its caller
// without asking the model again.
func (a *Agent) Handle(ctx context.Context, payload any, md xmlpipe.Metadata) (xmlpipe.Response, error) {
	if md.From == a.Name {
		if t, ok := xmlpipe.PayloadText(payload); ok {
			if answer, ok := strings.CutPrefix(t, selfAnswerMark); ok {
				return a.answer(md, answer), nil
			}
		}
	}
	return a.turn(ctx, md)
}

// HandleError implements xmlpipe.ErrorHandler: a <huh> or SystemError comes
// back into the conversation (it is already in the thread's history) so the
// model can correct itself.
func (a *Agent) HandleError(ctx context.Context, _ *xmlpipe.DeliveryError, md xmlpipe.Metadata) (xmlpipe.Response, error) {
	return a.turn(ctx, md)
}

// turn runs one model call for the message just appended to the thread.
func (a *Agent) turn(ctx context.Context, md xmlpipe.Metadata) (xmlpipe.Response, error) {
	session, slots := a.history(md)
	incoming := -1
	iterations := 0
	for i, s := range slots {
		if s.To == a.Name && s.PayloadType != replyType {
			iterations++
			incoming = i
		}
	}
	if max := cmpOr(a.MaxIterations, DefaultMaxIterations); iterations > max {
		return a.halt(md, fmt.Sprintf("max_iterations (%d) reached on this thread", max))
	}
	if reason := a.overBudget(session); reason != "" {
		return a.halt(md, reason)
	}
	msgs := a.messages(md, slots, incoming)
	req := Request{Model: a.Model, Messages: msgs, MaxTokens: a.MaxTokens, Temperature: a.Temperature,
		Agent: a.Name, Thread: session}
	if a.OnDelta != nil {
		req.OnDelta = a.prose(md.ThreadID)
		defer a.OnDelta(a.Name, md.ThreadID, "", true)
	}
	rep, err := a.LLM.Chat(ctx, req)
	if err != nil {
		// The caller learns why the work stopped; a <huh> to whoever sent
		// the message (perhaps a peer answering) would not reach it.
		return a.halt(md, "model call failed: "+err.Error())
	}
	if _, err := a.History.Append(registry.Slot{ThreadID: md.ThreadID, From: a.Name, PayloadType: replyType,
		Payload: rep.Content, Raw: []byte(rep.Content), OwnName: a.Name}); err != nil {
		a.logger().Warn("agent reply not recorded", "agent", a.Name, "thread", md.ThreadID, "error", err)
	}
	if n := cmpOr(a.RepeatLimit, DefaultRepeatLimit); repeats(slots, a.Name, rep.Content) >= n {
		return a.halt(md, fmt.Sprintf("no progress: the same output %d times in a row", n))
	}
	if hasElement(rep.Content) {
		return xmlpipe.Raw([]byte(rep.Content)), nil
	}
	return a.answer(md, rep.Content), nil
}

// halt ends the agent's work on the thread with a clear reason to the caller.
func (a *Agent) halt(md xmlpipe.Metadata, reason string) (xmlpipe.Response, error) {
	a.logger().Warn("agent halted", "agent", a.Name, "thread", md.ThreadID, "reason", reason)
	return a.answer(md, fmt.Sprintf("[%s halted: %s]", a.Name, reason)), nil
}

// answer responds to the caller with text: in the caller's own payload when
// it is a listener with a text field, else as an Answer.
func (a *Agent) answer(md xmlpipe.Metadata, text string) xmlpipe.Response {
	if a.Threads != nil && a.Lookup != nil {
		if caller, _, err := a.Threads.Caller(md.ThreadID); err == nil {
			if caller == a.Name {
				// Answering from a self-iteration thread: the answer goes up
				// one level, marked so it is passed on, not thought about.
				text = selfAnswerMark + text
			}
			if pt, ok := a.Lookup(caller); ok {
				if v, ok := xmlpipe.NewTextPayload(pt.GoType(), text); ok {
					return xmlpipe.Respond(v)
				}
			}
		}
	}
	return xmlpipe.Respond(&Answer{Text: text})
}

// overBudget returns why a budget stops the turn, or "".
func (a *Agent) overBudget(session string) string {
	return a.Budget.check(a.Usage, a.Name, session, &a.warned, a.logger())
}

func (a *Agent) logger() *slog.Logger {
	if a.Logger != nil {
		return a.Logger
	}
	return slog.Default()
}

// history returns the agent's session thread (the thread its self-iteration
// started from) and the slots of that thread and of the self-call threads
// below it, in time order.
func (a *Agent) history(md xmlpipe.Metadata) (string, []registry.Slot) {
	session := md.ThreadID
	ids := []string{md.ThreadID}
	if md.IsSelfCall && a.Threads != nil {
		for _, id := range a.Threads.Ancestors(md.ThreadID)[1:] {
			tc, ok := a.History.Thread(id)
			if !ok || !slices.ContainsFunc(tc.Slots(), func(s registry.Slot) bool { return s.To == a.Name }) {
				break
			}
			ids = append(ids, id)
			session = id
		}
	}
	var slots []registry.Slot
	for _, id := range ids {
		if tc, ok := a.History.Thread(id); ok {
			slots = append(slots, tc.Slots()...)
		}
	}
	if len(ids) > 1 {
		slices.SortStableFunc(slots, func(x, y registry.Slot) int { return x.Time.Compare(y.Time) })
	}
	return session, slots
}

// prose returns the request's delta callback: it passes text on until an
// XML element starts (tool-call progress is not shown). When the router
// retries after a stream broke off, the new attempt's text follows what was
// already shown.
func (a *Agent) prose(thread string) func(Delta) {
	var seen strings.Builder
	shown, stopped := 0, false
	return func(delta Delta) {
		d := delta.Text
		if stopped || d == "" {
			return
		}
		seen.WriteString(d)
		text := seen.String()
		if i := elementStart(text); i >= 0 {
			text, stopped = text[:i], true
		}
		if len(text) > shown {
			a.OnDelta(a.Name, thread, text[shown:], false)
			shown = len(text)
		}
	}
}

func cmpOr(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}
