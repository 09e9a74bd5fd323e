package llm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/aeiou"
	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
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

// ToolCalling is how an agent's model reaches the agent's peers and tools.
type ToolCalling string

// The tool calling modes.
const (
	// NativeTools offers every peer and tool as a function through the
	// provider's own tool calling (the default): a call becomes a message
	// to that listener, its answer the call's result, and the reply's text
	// is the answer, never parsed for XML.
	NativeTools ToolCalling = "native"
	// XMLTools is for models without function calling: the peers' payload
	// schemas are in the system prompt, and an element in the reply whose
	// root names a peer's payload becomes a message to that peer; all other
	// text (markup included) is the answer.
	XMLTools ToolCalling = "xml"
)

// ModelTraits is what the backend that would serve a model says about it.
type ModelTraits struct {
	// Model is the model the backend would ask for ("" asked: its default).
	Model string
	// ToolCalling is the backend's tool_calling ("" when unset).
	ToolCalling ToolCalling
	// ContextWindow is the backend's context_window in tokens (0: unset).
	ContextWindow int
}

// ModelInfo is an optional capability of a Chatter: what the backend that
// would serve a model says about it (*Router is one).
type ModelInfo interface {
	ModelTraits(model string) ModelTraits
}

// Defaults of the agent loop's bounds.
const (
	// DefaultMaxIterations bounds an agent's model calls in one turn of a
	// conversation (from its caller's message to its answer).
	DefaultMaxIterations = 25
	// DefaultRepeatLimit is the progress guard's N: the same normalised
	// output — text and tool calls — this many times in a row halts the turn.
	DefaultRepeatLimit = 3
	// DefaultAbandonCallsAfter is how long calls may wait for results
	// before a new message gives them up: longer than any listener's
	// timeout by default (tools 60 s, agents 5 min).
	DefaultAbandonCallsAfter = 15 * time.Minute
	// DefaultMaxCallsPerTurn caps the messages one model reply sends (the
	// pump's own default of max_messages_per_turn).
	DefaultMaxCallsPerTurn = 32
	// MaxHistoryText caps the text one history message contributes to a
	// request; longer messages (a huge model reply, a huge payload) are cut
	// with a note, so one bad turn cannot make every later request too large.
	MaxHistoryText = 16 << 10
)

// Agent is the agent loop as a listener handler (seed 000 §11). Each message
// it receives — its caller's task, a peer's answer, a <huh> or SystemError
// through HandleError — continues the conversation on the message's thread,
// whose history (the context buffer, persisted by a durable organism) holds
// everything the loop knows: a restart in the middle of a turn carries on.
//
// In native mode (the default) the model is offered every peer and local
// tool as a function. Its tool calls become messages to those peers, sent
// together and run concurrently, each with the call's id as its correlation
// ref; a call that cannot be made (an unknown function, arguments that are
// not JSON or do not fit the peer's payload) is answered at once with the
// reason, so the model corrects itself. The model is asked again once
// every call has its result — the peer's answer, or the error about the
// message — and its final text is the answer to the caller, byte for byte.
// In XML mode (ToolCalling XMLTools) the model writes peer payloads in its
// text instead (see XMLTools).
//
// An answer with a declared payload (Response, or a caller that takes no
// text) is asked for as structured output and converted to that payload
// with codec.AppendJSON; an answer that does not fit goes back to the model
// once. Every model call counts against MaxIterations for the turn, the
// progress guard halts a turn that repeats itself, and the history sent is
// trimmed to the context window, oldest first, with a note.
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
	// MaxIterations bounds the model calls of one turn (0: default 25).
	MaxIterations int
	// RepeatLimit is the progress guard's N (0: default 3).
	RepeatLimit int
	// ToolCalling is native or xml; "" takes the serving backend's
	// tool_calling (ModelInfo), else native.
	ToolCalling ToolCalling
	// ContextWindow is the model's context window in tokens; 0 takes the
	// serving backend's context_window, else ContextWindowOf(model).
	ContextWindow int
	// Response, when set, is the payload of the agent's answers: the model
	// is asked for it as structured output (see Agent).
	Response *xmlpipe.PayloadType
	// LocalTools are functions the loop answers itself (see LocalTool),
	// offered in native mode beside the peers.
	LocalTools []LocalTool
	// LoopControl, when set, is AEIOU v3 loop control (native mode only):
	// the model gets the aeiou_magic tool and the rules, and its answers
	// are decided by their signed tokens (see loopcontrol.go).
	LoopControl *aeiou.Host
	// Librarian, when set, curates the context of native-mode
	// conversations before every model call — folding, evicting and
	// unfolding segments of the history (see Librarian) — and the model is
	// offered context_unfold; nil fits the history to the window, oldest
	// first, with a note.
	Librarian *Librarian
	// AbandonCallsAfter is how long calls may go without a result before a
	// new message (the caller's, say) gives them up, so that a call whose
	// answer was lost cannot stall the conversation for ever (0:
	// DefaultAbandonCallsAfter). Time is the history's clock: from the
	// calls' slot to the new message's.
	AbandonCallsAfter time.Duration
	// MaxCallsPerTurn caps the tool calls of one model reply that are sent
	// (0: DefaultMaxCallsPerTurn); the calls beyond it are answered at once
	// with the limit, so the model makes them later.
	MaxCallsPerTurn int
	// Budget is checked before each call.
	Budget Budget
	// Budgets, when set, returns the budget in force, checked before each
	// call in place of Budget: an organism whose reload changes its
	// budgets: section reaches the conversations already running with it.
	Budgets func() Budget
	// LLM sends the requests; Usage feeds the budgets (both usually the Router).
	LLM   Chatter
	Usage UsageSource
	// History is the context buffer holding the threads' messages.
	History *registry.ContextBuffer
	// Threads gives thread ancestry and callers.
	Threads Threads
	// Lookup returns a registered listener's payload type (to answer a
	// listener caller in its own payload, and to read restored history);
	// nil answers with Answer.
	Lookup func(name string) (*xmlpipe.PayloadType, bool)
	// Foreign reports whether the caller of a conversation that is no
	// listener is outside the organism's own users — a federation peer, a
	// callable's call — and so is not told why a turn halted (see
	// haltAnswer); nil: only listeners are.
	Foreign func(caller string) bool
	// OnDelta, when set, streams the model's text as it arrives, for every
	// model call of a turn: delta pieces, then end=true once that call's
	// reply is complete or failed. In native mode all of the text is shown
	// (it is the answer, markup and all); in XML mode the text up to the
	// first element naming a peer (messages to peers are not shown).
	OnDelta func(agent, thread, delta string, end bool)
	// OnInterim, when set, shows the agent's interim text, which no answer
	// carries: the text of a turn the agent's loop control continues, the
	// text the model wrote beside its tool calls (native tool calling) and
	// the text before its first message to a peer (XML mode: what its
	// stream showed, trailing line breaks aside) — tokens stripped; not
	// sent when blank. The user sees it where
	// streamed text is not shown (a pipe), once where it is.
	OnInterim func(agent, thread, text string)
	// Logger receives warnings (default slog.Default()).
	Logger *slog.Logger

	warned atomic.Bool
	box    atomic.Pointer[toolbox]
	locks  sessionLocks
	loops  loopSessions
	convos convoCache
	// replySaveHook, when set (tests), is called as a text reply is
	// about to be saved (false) and once it was (true).
	replySaveHook func(saved bool)
}

// Handle implements xmlpipe.Handler: the conversation goes on with the
// message. An answer the agent gave itself on a self-iteration thread (XML
// mode) is passed on to its caller without asking the model again.
func (a *Agent) Handle(ctx context.Context, payload any, md xmlpipe.Metadata) (xmlpipe.Response, error) {
	if md.From == a.Name {
		if t, ok := stage.PayloadText(payload); ok {
			if answer, ok := strings.CutPrefix(t, selfAnswerMark); ok {
				if reason, ok := strings.CutPrefix(answer, selfHaltMark); ok {
					return a.reply(md, reason, true), nil
				}
				return a.answer(md, answer), nil
			}
		}
	}
	return a.handle(ctx, payload, nil, md)
}

// HandleError implements xmlpipe.ErrorHandler: a <huh> or SystemError goes
// back to the model in words — as the result of the call it is about, or as
// a note — so the model can correct itself.
func (a *Agent) HandleError(ctx context.Context, de *xmlpipe.DeliveryError, md xmlpipe.Metadata) (xmlpipe.Response, error) {
	return a.handle(ctx, nil, de, md)
}

// turnState is what one handling knows.
type turnState struct {
	md      xmlpipe.Metadata
	mode    ToolCalling
	traits  ModelTraits
	session string
	caller  string
	// callerType is the caller's payload type (nil: the caller is outside
	// the organism, or the agent itself).
	callerType *xmlpipe.PayloadType
	c          *convo
	// fresh marks a handling of a new message (not an answer to a call):
	// it begins a new agent turn.
	fresh bool
	// again marks a fresh message handled again: the agent's steps of its
	// turn are recorded after it (a halt held its handling, or a crash
	// interrupted it), so the turn goes on — its AEIOU turn included.
	again bool
	// spread marks an XML-mode history read from more than one thread (a
	// self-iteration's): its slots are not one thread's, so the librarian
	// does not curate it (segment ids are slot indexes of one thread) and
	// it is fitted to the window instead.
	spread bool
	// cutNote begins the result of a call whose arguments broke because
	// the provider cut the reply at the token limit ("" when it did not).
	cutNote string
	// seen is how many slots of the session's thread the handling read
	// (-1: the history spans several threads); see overtaken.
	seen int
	// before is how many slots the message's thread held when the
	// handling began, before it waited for the conversation's lock: a step
	// of the agent's recorded there at or after that index was made by a
	// handling that held the lock meanwhile, and went out with it (see
	// unsentStep).
	before int
	// seq is the journal seq of the message handled (xmlpipe.MessageSeq;
	// 0: not journaled), recorded with every slot the handling records: a
	// message handled again after a crash finds exactly its own slot and
	// its own handling's step by it (see unsentStep).
	seq int64
	// hctx is the handling's context: a record settles the handling
	// (xmlpipe.Settle), so that what it recorded goes out even if a halt
	// lands before it returns.
	hctx context.Context
}

// handle is one handling of a message (payload) or error (de).
func (a *Agent) handle(ctx context.Context, payload any, de *xmlpipe.DeliveryError, md xmlpipe.Metadata) (xmlpipe.Response, error) {
	st := &turnState{md: md, hctx: ctx, before: a.historyLen(md.ThreadID), seq: xmlpipe.MessageSeq(ctx)}
	st.mode, st.traits = a.settings()
	st.session = md.ThreadID
	ids := []string{md.ThreadID}
	if st.mode == XMLTools {
		st.session, ids = a.selfSession(md)
		st.spread = len(ids) > 1
	}
	unlock := a.locks.lock(st.session)
	defer unlock()
	st.caller, st.callerType = a.callerOf(st.session)
	if st.spread {
		st.c, st.seen = a.readConvo(a.slotsOf(ids), st.caller), -1
	} else {
		st.c, st.seen = a.convoOf(st.session, st.caller)
		defer a.keepConvo(st.session, st.c) // before the unlock: deferred later
	}
	if a.History.Full(md.ThreadID) || a.History.Full(st.session) {
		// A full history records no more messages: the one handled now is
		// not in it (or is its last, with no room for the answer), so the
		// model would answer an earlier message again, and nothing it said
		// would be kept. The caller hears why, every time, instead.
		return a.halt(st, fmt.Sprintf(historyFullReason, a.historyLen(st.session)))
	}
	if resp, done, err := a.redo(ctx, st, payload, de); done {
		return resp, err
	}

	if a.lateXMLAnswer(st, payload, de) {
		// Asked now, the model would answer a caller that has its answer
		// already (its thread is gone: whatever it wrote would be lost, yet
		// kept in the history as said). The message stays in the history
		// and is read at the conversation's next turn.
		a.logger().Info("a peer's answer arrived after the agent answered its caller: kept for the next turn, "+
			"the model is not asked", "agent", a.Name, "thread", md.ThreadID, "from", md.From)
		return nil, nil
	}
	switch {
	case md.InReplyTo != "":
		call, ok := st.c.pendingCall(md.InReplyTo)
		if !ok && st.c.resultUnread(md.InReplyTo) {
			// Its result is recorded but the model was never asked with
			// it: the handling that recorded it was interrupted (a halt,
			// a crash), and this is the same message handled again.
			a.logger().Info("the call's result is in but the model has not read it: the model is asked", "agent", a.Name,
				"thread", md.ThreadID, "ref", md.InReplyTo)
			break
		}
		if !ok {
			a.logger().Debug("answer for no pending call (late or repeated): ignored", "agent", a.Name,
				"thread", md.ThreadID, "ref", md.InReplyTo, "from", md.From)
			return xmlpipe.Await(), nil
		}
		r := resultRecord{ID: call.ID, Name: call.Name}
		switch {
		case de != nil && de.Refusal != nil:
			// The organism's governance refused the call before its target
			// saw it: a rule, a human's denial or an approval that timed out.
			r.Content, r.IsError = "The call was "+errorText(de), true
		case de != nil:
			r.Content, r.IsError = "The call failed: "+errorText(de), true
		default:
			if text, ok := payloadContent(payload); ok {
				r.Content = text
			} else {
				r.Content = fmt.Sprintf("%v", payload)
			}
			r.IsError = failedResult(payload)
		}
		a.recordResult(st, r)
	case de != nil:
		answerRefused := st.mode == NativeTools && st.c.answered()
		kind := feedbackType
		if answerRefused {
			kind = outputFeedbackType
		}
		note := a.errorFeedback(st, de)
		if st.c.noteUnread(note) {
			// The note is the agent's latest record and the model was
			// never asked with it: the handling that recorded it was
			// interrupted (a halt, a crash), and this is the same error
			// handled again.
			a.logger().Info("the note on this error is in but the model has not read it: the model is asked",
				"agent", a.Name, "thread", md.ThreadID)
			break
		}
		if st.c.lastOwn() == itemHalt || answerRefused && st.c.outputFeedbacks() > 0 {
			// The answer that ended the turn was refused again (its caller
			// takes none the agent can give): nothing more can be said, and
			// answering again would only be refused again.
			a.logger().Warn("agent's answer refused again: the conversation ends", "agent", a.Name,
				"thread", md.ThreadID, "error", errorText(de))
			return nil, nil
		}
		a.record(st, registry.Slot{PayloadType: kind, Raw: []byte(note)})
	}
	if len(st.c.pending) > 0 {
		if md.InReplyTo != "" || de != nil || st.c.latest.Sub(st.c.pendingSince) < cmpDur(a.AbandonCallsAfter, DefaultAbandonCallsAfter) {
			// The model is asked again once every call has its result; what
			// arrives meanwhile is in the history and seen then.
			return xmlpipe.Await(), nil
		}
		// A new message finds calls that never got a result (one lost in a
		// crash, say): they are given up, so the conversation goes on.
		for _, call := range slices.Clone(st.c.pending) {
			a.recordResult(st, resultRecord{ID: call.ID, Name: call.Name, IsError: true, Content: fmt.Sprintf(
				"No result arrived within %v: the call is abandoned.", cmpDur(a.AbandonCallsAfter, DefaultAbandonCallsAfter))})
		}
	}
	st.fresh = payload != nil && md.InReplyTo == ""
	st.again = st.fresh && a.handledAgain(st, payload)
	if st.fresh {
		a.tellExpired(st)
	}
	return a.think(ctx, st)
}

// think asks the model until the turn needs an answer from elsewhere: tool
// calls to send (native), messages to peers (XML), or the answer.
func (a *Agent) think(ctx context.Context, st *turnState) (xmlpipe.Response, error) {
	md := st.md
	var box *toolbox
	if st.mode == NativeTools {
		box = a.toolbox(md.Peers)
	}
	out, outAsText := a.outputType(st)
	var loop *loopSession
	if a.loopControlled(st) {
		var err error
		if loop, err = a.beginLoop(st, st.fresh && !st.again); err != nil {
			return a.halt(st, "loop control: "+err.Error())
		}
	}
	for {
		// Until the model's reply is recorded, a halt holds the handling:
		// it leaves no trace, and the message is handled again after the
		// resume (the steps recorded before stay).
		xmlpipe.Settle(ctx, false)
		if h := st.c.held; h != nil && st.mode == NativeTools {
			// A halt stopped this step during its local tools: the model's
			// reply is known, and the calls answered before the halt are
			// not made again.
			a.logger().Info("the step the halt stopped is taken up: the model is not asked again, and only the "+
				"calls left without a result are made", "agent", a.Name, "thread", st.session, "calls", len(h.Calls),
				"answered", len(h.Results)+len(h.Sends))
			st.cutNote = h.CutNote
			d := digest(h.Content, h.Calls)
			cr := &callsRecord{Content: h.Content, Calls: h.Calls, Reasoning: h.Reasoning, sum: &d}
			if resp, next, err := a.step(ctx, st, box, loop, cr, h.toolCalls(), h.done(), a.sent(st, h)); !next {
				return resp, err
			}
			continue
		}
		if limit := cmpOr(a.MaxIterations, DefaultMaxIterations); st.c.iterations() >= limit {
			return a.halt(st, fmt.Sprintf("max_iterations (%d) reached in this turn", limit))
		}
		if reason := a.overBudget(st.session); reason != "" {
			return a.halt(st, reason)
		}
		req := a.request(ctx, st, box, out)
		rep, err := a.chat(ctx, st, req)
		// A kill or cancel that landed as the reply arrived stops the turn
		// all the same: the pump drops whatever the handling returns, so
		// the reply kept would read as an answer given (or calls made)
		// that nobody got. A halt holds only a call it stopped: one that
		// landed after the reply finds the step recorded (see Settle).
		switch cause := context.Cause(ctx); {
		case errors.Is(cause, xmlpipe.ErrConversationKilled):
			return a.killed(st), nil
		case errors.Is(cause, xmlpipe.ErrCancelled):
			return a.cancelled(st, nil, nil), nil
		case err != nil && errors.Is(cause, xmlpipe.ErrHalted):
			return a.held(st), nil
		}
		if err != nil {
			// The caller learns why the work stopped; a <huh> to whoever sent
			// the message (perhaps a peer answering) would not reach it.
			return a.halt(st, "model call failed: "+err.Error())
		}
		if a.overtaken(st) {
			a.logger().Info("the caller's next message arrived while the model answered: the reply is dropped, "+
				"and the model is asked again with it", "agent", a.Name, "thread", st.session)
			return xmlpipe.Await(), nil
		}
		if st.mode == NativeTools && len(rep.ToolCalls) > 0 {
			calls := a.mintIDs(st, rep.ToolCalls)
			d := digest(rep.Content, calls)
			cr := &callsRecord{Content: rep.Content, Calls: calls, Reasoning: rep.Reasoning, sum: &d}
			if n := cmpOr(a.RepeatLimit, DefaultRepeatLimit); st.c.repeats(d)+1 >= n {
				reason := fmt.Sprintf("no progress: the same output %d times in a row", n)
				a.record(st, registry.Slot{PayloadType: callsType, Raw: mustJSON(cr), Payload: cr})
				// The calls are never made: each gets its result now, so the
				// conversation waits for none and its next message is
				// answered (the model reads why nothing ran).
				for _, call := range cr.Calls {
					a.recordResult(st, resultRecord{ID: call.ID, Name: call.Name, IsError: true,
						Content: "Not made: the turn halted (" + reason + ")."})
				}
				return a.halt(st, reason)
			}
			a.interim(st, rep.Content)
			st.cutNote = ""
			if cutOff(rep) {
				st.cutNote = "Your reply was cut off at " + tokenLimit(req.MaxTokens) + " while writing this call. "
			}
			if resp, next, err := a.step(ctx, st, box, loop, cr, rep.ToolCalls, nil, nil); !next {
				return resp, err
			}
			continue // every call was answered here: the model goes on
		}
		if st.mode == NativeTools && rep.NamelessCalls > 0 && strings.TrimSpace(rep.Content) == "" {
			// Neither an answer nor a call that can run: the model hears
			// why, once a turn, instead of its caller getting an empty
			// answer; the second time the turn halts.
			if st.c.feedbacks(namelessFeedbackType) > 0 {
				return a.halt(st, "its tool calls had no function name twice")
			}
			a.record(st, registry.Slot{PayloadType: namelessFeedbackType, Raw: []byte(namelessCallNote)})
			continue
		}
		if reason := withheldAnswer(rep, req.MaxTokens); reason != "" {
			// The caller learns why there is no answer instead of getting
			// an empty one, and the model is not asked again in vain.
			return a.halt(st, reason)
		}
		d := digest(rep.Content, nil)
		if resp, stopped := a.saveReply(ctx, st, rep.Content, d); stopped {
			return resp, nil
		}
		if n := cmpOr(a.RepeatLimit, DefaultRepeatLimit); st.c.repeats(d) >= n {
			return a.halt(st, fmt.Sprintf("no progress: the same output %d times in a row", n))
		}
		if st.mode == XMLTools {
			targets := a.xmlTargets(md)
			unfolded := a.curates(st) && a.xmlUnfolds(targets) && a.answerUnfolds(st, rep.Content) > 0
			if msgs := peerElements(rep.Content, targets); len(msgs) > 0 {
				// The prose before the first message is what its stream
				// showed: no answer, but the agent's interim text.
				if start, _ := peerStart(rep.Content, targets); start > 0 {
					a.interim(st, strings.TrimRight(rep.Content[:start], "\r\n"))
				}
				return xmlpipe.Raw(msgs), nil
			}
			if unfolded {
				continue // answered here: the model goes on reading
			}
		}
		if loop != nil {
			resp, again, err := a.decideLoop(ctx, st, loop, rep.Content)
			if again {
				continue
			}
			return resp, err
		}
		if out == nil {
			return a.answer(md, rep.Content), nil
		}
		resp, refusal := a.structured(md, out, outAsText, rep.Content)
		if resp != nil {
			return resp, nil
		}
		if cutOff(rep) {
			// The JSON is broken because it was cut, not because the model
			// misread the schema: the model and the operator hear that.
			refusal = cutAnswerNote(req.MaxTokens) + refusal
		}
		if st.c.outputFeedbacks() > 0 {
			return a.halt(st, "its answer did not fit "+out.Name()+" twice: "+refusal)
		}
		a.record(st, registry.Slot{PayloadType: outputFeedbackType, Raw: []byte(refusal)})
	}
}

// saveReply records the model's text reply (digest d) unless a kill or
// cancel landed since the check after the model call: the pump drops what
// such a handling returns, so a reply kept would read as an answer given
// that nobody got. A cancel is checked again once the reply is saved: one
// landing meanwhile ends the turn with the cancel's note, which takes the
// reply back (convo.add). The pump's mark goes into the history before the
// cancel reaches the handling, so a reply saved after it is not read
// either, whenever the handling learns of it (convo.add).
func (a *Agent) saveReply(ctx context.Context, st *turnState, content string, d uint64) (xmlpipe.Response, bool) {
	if a.replySaveHook != nil {
		a.replySaveHook(false)
	}
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, xmlpipe.ErrConversationKilled):
		return a.killed(st), true
	case errors.Is(cause, xmlpipe.ErrCancelled):
		return a.cancelled(st, nil, nil), true
	}
	a.record(st, registry.Slot{PayloadType: replyType, Raw: []byte(content), Payload: &replyRecord{sum: d}})
	if a.replySaveHook != nil {
		a.replySaveHook(true)
	}
	if errors.Is(context.Cause(ctx), xmlpipe.ErrCancelled) {
		return a.cancelled(st, nil, nil), true
	}
	return nil, false
}

// step makes the tool calls of the model's reply cr (raw: as the model
// wrote them): it returns the messages to send, or next true when every
// call was answered here and the model goes on. The calls and their
// results are recorded once every local tool has run: a halt or kill that
// stops one leaves no trace in the conversation, never a failure the model
// would read. A halt keeps the step aside instead (recordHeldStep): after
// the resume the same message takes it up with the results of the calls
// answered before the halt (done) and the messages local tools answered
// theirs with (sent), so a local tool that ran to the end is not run
// again, nor the model asked again.
func (a *Agent) step(ctx context.Context, st *turnState, box *toolbox, loop *loopSession, cr *callsRecord,
	raw []ToolCall, done map[string]resultRecord, sent map[string]*xmlpipe.SendResponse) (resp xmlpipe.Response, next bool,
	err error) {
	sends, results, stopped := a.dispatch(ctx, st, box, raw, cr.Calls, done, sent)
	switch {
	case errors.Is(stopped, xmlpipe.ErrConversationKilled):
		return a.killed(st), false, nil
	case errors.Is(stopped, xmlpipe.ErrCancelled):
		return a.cancelled(st, cr, results), false, nil
	case errors.Is(stopped, xmlpipe.ErrHalted):
		h := newHeldStep(cr.Content, raw, cr.Calls, st.cutNote, results)
		h.Reasoning = cr.Reasoning
		a.keepSends(st, h, box, sends)
		a.recordHeldStep(st, h)
		return a.held(st), false, nil
	}
	a.record(st, registry.Slot{PayloadType: callsType, Raw: mustJSON(cr), Payload: cr})
	callsAt := st.c.items[len(st.c.items)-1].slot.Index
	for _, r := range results {
		a.recordResult(st, r)
	}
	if loop != nil && loop.internal != nil {
		resp, err = a.halt(st, aeiou.ErrCodeMagicInternal+": "+loop.internal.Error())
		return resp, false, err
	}
	if len(sends) > 0 {
		if errors.Is(context.Cause(ctx), xmlpipe.ErrCancelled) {
			return a.cancelledSends(st, cr, callsAt), false, nil
		}
		return xmlpipe.SendAll(sends...), false, nil
	}
	return nil, true, nil
}

// cancelledSends ends a step whose calls were recorded (at slot callsAt)
// as a cancel landed, before their messages went out: the pump drops them,
// so their results never come. When the pump's cancel mark came before
// the calls were recorded, it found none of them pending: each gets the
// result that it was not made, and the model the note that the user
// cancelled. A mark after them found them pending and says so itself.
func (a *Agent) cancelledSends(st *turnState, cr *callsRecord, callsAt int) xmlpipe.Response {
	if tc, ok := a.History.Thread(st.session); ok {
		for _, s := range tc.Slice(callsAt+1, math.MaxInt) {
			if s.PayloadType == xmlpipe.CancelMarkType && s.From == "" && s.To == "" {
				a.logger().Info("answer cancelled as its calls went out: the pump's mark ends the wait for them",
					"agent", a.Name, "thread", st.md.ThreadID)
				a.loops.end(st.session)
				return nil
			}
		}
	}
	for _, call := range cr.Calls {
		if st.c.results[call.ID] == nil {
			a.recordResult(st, resultRecord{ID: call.ID, Name: call.Name, IsError: true, Content: notMadeCancelled})
		}
	}
	return a.cancelled(st, nil, nil)
}

// interim hands text the model wrote beside its tool calls or messages to
// OnInterim: it is no answer (the answer comes once they are answered),
// and a caller that sees no stream would miss it. Loop control tokens are
// stripped; blank text is not shown.
func (a *Agent) interim(st *turnState, text string) {
	if a.OnInterim == nil {
		return
	}
	if a.loopControlled(st) {
		text = aeiou.StripTokens(text)
	}
	if strings.TrimSpace(text) != "" {
		a.OnInterim(a.Name, st.md.ThreadID, text)
	}
}

// namelessCallNote is what the model hears when its reply was only tool
// calls without a function name.
const namelessCallNote = "Your reply called a tool without naming the function, so nothing ran. " +
	"Call one of your tools by its name, or answer in text."

// restartNote ends the streamed text of a model reply that was cut off
// when the model is asked again (Delta.Restart): what was shown of it is
// void, and the reply streams anew.
const restartNote = "\n[the reply was cut off; the model is asked again]\n"

// haltedStreamNote ends the streamed text of a model reply an operator's
// halt cut off: what was shown of it is void, and the reply streams anew
// after the resume.
const haltedStreamNote = "\n[the reply was cut off by a halt; the model is asked again after the resume]\n"

// chat sends req, streaming through OnDelta.
func (a *Agent) chat(ctx context.Context, st *turnState, req Request) (rep Reply, err error) {
	if a.OnDelta != nil {
		thread := st.md.ThreadID
		var tokens *tokenFilter
		shown := false // native mode: text of the reply was shown
		if st.mode == XMLTools {
			req.OnDelta = a.prose(thread, a.xmlStops(st.md))
		} else {
			show := func(text string) {
				if text != "" {
					shown = true
					a.OnDelta(a.Name, thread, text, false)
				}
			}
			if a.loopControlled(st) {
				// The answer is delivered with its token lines stripped:
				// what is shown of it as it streams is too.
				tokens = &tokenFilter{emit: show}
			}
			req.OnDelta = func(d Delta) {
				switch {
				case d.Restart:
					if tokens != nil {
						tokens.reset()
					}
					if shown {
						shown = false
						a.OnDelta(a.Name, thread, restartNote, true)
					}
				case tokens != nil:
					tokens.write(d.Text)
				default:
					show(d.Text)
				}
			}
		}
		defer func() {
			if tokens != nil {
				tokens.end() // what it held is shown before the end
			}
			if err != nil && shown && errors.Is(context.Cause(ctx), xmlpipe.ErrHalted) {
				a.OnDelta(a.Name, thread, haltedStreamNote, true)
			}
			a.OnDelta(a.Name, thread, "", true)
		}()
	}
	return a.LLM.Chat(ctx, req)
}

// settings returns the agent's tool calling mode and what its backend says
// about its model.
func (a *Agent) settings() (ToolCalling, ModelTraits) {
	var t ModelTraits
	if mi, ok := a.LLM.(ModelInfo); ok {
		t = mi.ModelTraits(a.Model)
	}
	mode := a.ToolCalling
	if mode == "" {
		mode = t.ToolCalling
	}
	if mode != XMLTools {
		mode = NativeTools
	}
	return mode, t
}

// contextWindow is the window the history is fitted to.
func (a *Agent) contextWindow(t ModelTraits) int {
	switch {
	case a.ContextWindow > 0:
		return a.ContextWindow
	case t.ContextWindow > 0:
		return t.ContextWindow
	}
	model := a.Model
	if model == "" {
		model = t.Model
	}
	return ContextWindowOf(model)
}

// toolbox returns the functions offered for peers, rebuilt when they change.
func (a *Agent) toolbox(peers []xmlpipe.Peer) *toolbox {
	if b := a.box.Load(); b != nil && b.sameSource(peers) {
		return b
	}
	b, err := buildToolbox(peers, a.localTools())
	if err != nil {
		a.logger().Warn("agent tools", "agent", a.Name, "error", err)
	}
	if len(b.unoffered) > 0 {
		a.logger().Warn("peers not offered as functions: no payload contract reaches the agent for them — "+
			"no listener of that name is registered (yet), or this conversation's profile does not reach it "+
			"(a callable's conversation reaches only what its requires: lists, a security profile only its "+
			"listeners)", "agent", a.Name, "peers", b.unoffered)
	}
	a.box.Store(b)
	return b
}

// callerOf returns the caller of the session thread and its payload type
// (nil when it is no listener, or the agent itself).
func (a *Agent) callerOf(session string) (string, *xmlpipe.PayloadType) {
	if a.Threads == nil {
		return "", nil
	}
	caller, _, err := a.Threads.Caller(session)
	if err != nil {
		return "", nil
	}
	if a.Lookup == nil || strings.EqualFold(caller, a.Name) {
		return caller, nil
	}
	pt, ok := a.Lookup(caller)
	if !ok {
		return caller, nil
	}
	return caller, pt
}

// slotsOf returns the slots of the threads ids, in time order.
func (a *Agent) slotsOf(ids []string) []registry.Slot {
	var slots []registry.Slot
	for _, id := range ids {
		if tc, ok := a.History.Thread(id); ok {
			slots = append(slots, tc.Slots()...)
		}
	}
	if len(ids) > 1 {
		slices.SortStableFunc(slots, func(x, y registry.Slot) int { return x.Time.Compare(y.Time) })
	}
	return slots
}

// selfSession returns the agent's session thread in XML mode (the thread its
// self-iteration started from) and the threads of its history: that thread
// and the self-call threads below it.
func (a *Agent) selfSession(md xmlpipe.Metadata) (string, []string) {
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
	return session, ids
}

// record appends one of the agent's own slots to the session's history and
// to st's view of it, and settles the handling (xmlpipe.Settle): what it
// returns now carries what is recorded, so a halt must not drop it. s.Raw
// is handed over (built for the slot, never changed again).
func (a *Agent) record(st *turnState, s registry.Slot) {
	if st.hctx != nil {
		xmlpipe.Settle(st.hctx, true)
	}
	s.ThreadID, s.From, s.OwnName, s.Seq = st.session, a.Name, a.Name, st.seq
	stored, err := a.History.AppendShared(s)
	st.c.recorded(stored, err)
	if err != nil {
		a.logger().Warn("agent history not recorded", "agent", a.Name, "thread", st.session, "kind", s.PayloadType,
			"error", err)
		stored = s
	}
	st.c.add(a, &stored)
}

// recordResult records a tool call's result.
func (a *Agent) recordResult(st *turnState, r resultRecord) {
	a.record(st, registry.Slot{PayloadType: resultType, Raw: mustJSON(r), Payload: &r})
}

// halt ends the agent's turn with a clear reason to the caller (recorded,
// so that a refusal of this answer is not answered again).
func (a *Agent) halt(st *turnState, reason string) (xmlpipe.Response, error) {
	a.logger().Warn("agent halted", "agent", a.Name, "thread", st.md.ThreadID, "reason", reason)
	a.loops.end(st.session)
	a.record(st, registry.Slot{PayloadType: haltType, Raw: []byte(reason)})
	return a.haltAnswer(st, reason)
}

// haltAnswer is what the caller of a turn that halted for reason gets. The
// organism's own user who talks to the agent (the console, a bus session,
// an MCP client) is answered with the reason, as text, in a Halted — not an
// Answer, so that it can be told from one. Any other caller — a listener, an
// agent whose tool the agent is, a callable's call, a federation peer
// (Foreign) — sees a failed call whose error says only that the agent
// halted (ErrTurnHalted): the reason may name backends, URLs and models, and
// goes to the log and the agent's history only. A turn that halts on a
// self-iteration thread fails the same way: the pump tells the failure of
// a message the agent sent itself to the caller of its self-iteration, not
// to the agent.
func (a *Agent) haltAnswer(st *turnState, reason string) (xmlpipe.Response, error) {
	if st.callerType != nil || a.Foreign != nil && a.Foreign(st.caller) {
		a.logger().Info("the agent's caller is told only that it halted", "agent", a.Name, "thread", st.md.ThreadID,
			"caller", st.caller)
		return nil, fmt.Errorf("%s could not finish: %w", a.Name, ErrTurnHalted)
	}
	return a.reply(st.md, fmt.Sprintf("[%s halted: %s]", a.Name, reason), true), nil
}

// historyFullReason is why a turn halts whose conversation's history holds
// as many messages as a thread may (%d: how many).
const historyFullReason = "this conversation's history is full (%d messages, " +
	"platform.context_buffer.max_slots_per_thread): begin a new conversation"

// killed ends the agent's turn of a conversation that was killed while
// the model was asked: nobody takes an answer any more, so none is sent.
func (a *Agent) killed(st *turnState) xmlpipe.Response {
	a.logger().Info("conversation killed: the agent's turn ended", "agent", a.Name, "thread", st.md.ThreadID)
	a.loops.end(st.session)
	return nil
}

// cancelledNote is what the model reads after a turn whose answer the user
// (or an operator) cancelled: the next message is answered knowing the
// earlier one was not.
const cancelledNote = "[the user cancelled the previous answer]"

// notMadeCancelled is the result of a call the model made in a turn whose
// answer was cancelled before the call was made.
const notMadeCancelled = "Not made: the user cancelled the answer."

// cancelledWhileRunning is the result of a call the model made and the
// agent sent (to a peer, a tool listener) whose answer the user cancelled
// while the call ran: the cancel dropped its work, so its result never
// comes (see convo.cancelMark).
const cancelledWhileRunning = "Cancelled while it ran: the user cancelled the answer."

// cancelled ends a turn whose answer was cancelled (xmlpipe.ErrCancelled)
// while the model was asked or its local tools ran: nothing is answered
// (the pump would drop it), and the conversation stays continuable. The
// history says the user cancelled the answer, so the next message is
// answered with it. Text the model streamed before the cancel is not
// kept: its reply never completed, and an assistant message cut mid-way
// would read as an answer given. Calls the model made (cr, nil when the
// model was asked) are recorded with their results: those answered before
// the cancel (results) keep theirs, every other gets one saying it was not
// made, so no call of the conversation waits for a result that never
// comes.
func (a *Agent) cancelled(st *turnState, cr *callsRecord, results []resultRecord) xmlpipe.Response {
	a.logger().Info("answer cancelled: the agent's turn ended, its conversation goes on", "agent", a.Name,
		"thread", st.md.ThreadID)
	a.loops.end(st.session)
	if cr != nil {
		a.record(st, registry.Slot{PayloadType: callsType, Raw: mustJSON(cr), Payload: cr})
		answered := map[string]bool{}
		for _, r := range results {
			answered[r.ID] = true
			a.recordResult(st, r)
		}
		for _, call := range cr.Calls {
			if !answered[call.ID] {
				a.recordResult(st, resultRecord{ID: call.ID, Name: call.Name, IsError: true, Content: notMadeCancelled})
			}
		}
	}
	a.record(st, registry.Slot{PayloadType: feedbackType, Raw: []byte(cancelledNote)})
	return nil
}

// held ends a handling an operator's halt interrupted while the model was
// asked or its local tools ran: the pump drops what it answers and hands it
// the message again after the resume, so nothing is answered and nothing
// of the interrupted step is recorded — the step after the resume is, for
// the conversation, the first. The loop control's turn stays open for it.
func (a *Agent) held(st *turnState) xmlpipe.Response {
	if st.hctx != nil {
		xmlpipe.Settle(st.hctx, false)
	}
	a.logger().Info("agent's turn held by the halt: its message is handled again after the resume",
		"agent", a.Name, "thread", st.md.ThreadID)
	return nil
}

// answer responds to the caller with text: in the caller's own payload when
// it is a listener with a text field, else as an Answer.
func (a *Agent) answer(md xmlpipe.Metadata, text string) xmlpipe.Response {
	return a.reply(md, text, false)
}

// reply is answer, or — halted — the text of a halt: marked as one when it
// goes up a self-iteration thread, and a Halted, not an Answer, for a
// caller outside the organism's listeners.
func (a *Agent) reply(md xmlpipe.Metadata, text string, halted bool) xmlpipe.Response {
	if a.Threads != nil && a.Lookup != nil {
		if caller, _, err := a.Threads.Caller(md.ThreadID); err == nil {
			if caller == a.Name {
				// Answering from a self-iteration thread: the answer goes up
				// one level, marked so it is passed on, not thought about.
				if halted {
					text = selfHaltMark + text
				}
				text = selfAnswerMark + text
			}
			if pt, ok := a.Lookup(caller); ok {
				if v, ok := stage.NewTextPayload(pt.GoType(), text); ok {
					return xmlpipe.Respond(v)
				}
			}
		}
	}
	if halted {
		return xmlpipe.Respond(&Halted{Text: text})
	}
	return xmlpipe.Respond(&Answer{Text: text})
}

// overBudget returns why a budget stops the turn, or "".
func (a *Agent) overBudget(session string) string {
	b := a.Budget
	if a.Budgets != nil {
		b = a.Budgets()
	}
	return b.check(a.Usage, a.Name, session, &a.warned, a.logger())
}

func (a *Agent) logger() *slog.Logger {
	if a.Logger != nil {
		return a.Logger
	}
	return slog.Default()
}

func cmpDur(v, def time.Duration) time.Duration {
	if v > 0 {
		return v
	}
	return def
}

func cmpOr(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// sessionLocks serialises the handlings of one conversation (one thinker
// per conversation, seed 000 §11.6): two answers to parallel calls arriving
// at once must not both find the other missing, nor both ask the model.
type sessionLocks struct {
	mu sync.Mutex
	m  map[string]*sessionLock
}

// sessionLock is one conversation's lock and how many handlings hold or
// wait for it.
type sessionLock struct {
	sync.Mutex
	refs int
}

// lock locks session and returns its unlock.
func (s *sessionLocks) lock(session string) func() {
	s.mu.Lock()
	if s.m == nil {
		s.m = map[string]*sessionLock{}
	}
	l := s.m[session]
	if l == nil {
		l = &sessionLock{}
		s.m[session] = l
	}
	l.refs++
	s.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		s.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(s.m, session)
		}
		s.mu.Unlock()
	}
}
