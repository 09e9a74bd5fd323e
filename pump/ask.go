package pump

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/internal/asked"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// ErrNoAnswer reports a conversation that completed without an answer: the
// listener asked handled the message and ended the chain (its handler
// returned nil) without replying or reaching another listener.
var ErrNoAnswer = errors.New("pump: the conversation ended without an answer")

// AskError is the error of an Ask whose conversation failed before it
// answered: one of its messages got a <huh>, a SystemError or became a dead
// letter, and no reply reached the sender. A failure sent to one of the
// conversation's listeners counts unless a message was delivered after it
// (its error handler went on).
type AskError struct {
	// Event is the failure: the first one sent to the asker, else the
	// last one sent to a listener of the conversation. Kind EventHuh,
	// EventSystemError or EventDeadLetter, with the canned text in Error,
	// the details in Diagnostics and, for a listener's, its name in To.
	Event Event
}

// Unwrap returns the error behind the failure (Event.Cause; nil when the
// pump has none), so errors.Is finds the causes a handler's context
// reports — ErrHandlerTimeout, ErrChainTooDeep, failure.ErrHandler, … —
// on an Ask's error too.
func (e *AskError) Unwrap() error { return e.Event.Cause }

// Error says what failed — the canned text, or a SystemError's message —
// with the diagnostics (the pump's reason).
func (e *AskError) Error() string {
	msg := e.Event.Error
	if se, ok := e.Event.Payload.(*xmlpipe.SystemError); ok && msg == "" && se != nil {
		msg = se.Message
	}
	if msg == "" {
		msg = string(e.Event.Kind)
	}
	if len(e.Event.Diagnostics) > 0 {
		msg += ": " + strings.Join(e.Event.Diagnostics, "; ")
	}
	return "pump: " + msg
}

// askInjectTimeout bounds the injection of an Ask's message, which its own
// context does not cut short (see ask).
const askInjectTimeout = time.Minute

// Ask sends payload (a Go value of a listener's payload type) from the
// external sender from to the listener named to, on a new conversation, and
// waits until the conversation completes — nothing of it in flight any
// more. It returns the conversation's final answer: the reply addressed back
// to from (Kind EventReply: the listener, or one it forwarded to, called
// xmlpipe.Respond), else the last message delivered to a listener before the
// conversation completed (Kind EventMessage: a chain that ended elsewhere,
// such as the hello-world's response-handler). Its Payload is the decoded Go
// value, Envelope its canonical bytes, From the listener that sent it.
//
// A message the pump refuses is a *failure.Failure (as with Send); a
// conversation that failed without a reply is an *AskError (errors.Is
// finds its cause: ErrHandlerTimeout, ErrChainTooDeep, a handler's own
// error, …) — a <huh>,
// SystemError or dead letter for the sender, or one for a listener of the
// conversation (a message it sent was refused, its answer could not be
// delivered) after which nothing more was delivered; one that ended at once
// without an answer is ErrNoAnswer; one killed (Kill) before it
// answered is ErrConversationKilled, one whose answer was cancelled
// (Cancel) is ErrCancelled; one the pump shut down before it
// completed wraps ErrClosed (and ErrShutdown, for ShutdownNow).
//
// When ctx ends first (its deadline, a cancel), the conversation is killed
// (Kill: its running handlers' calls are cancelled, its queued messages
// dropped, and it cannot be continued) and the error wraps
// context.Cause(ctx): ending the context gives the question up. To stop
// waiting and leave the conversation running instead, ask under
// KeepOnCancel(ctx). An
// empty to routes the message by its root tag. from must be a name no
// listener has (and not system or core).
//
// Every Ask shares one watcher of the pump's events, added on the first
// call (Watch).
func (p *Pump) Ask(ctx context.Context, from, to string, payload any) (Event, error) {
	body, err := p.encodeAsked(payload)
	if err != nil {
		return Event{}, err
	}
	return p.AskXML(ctx, from, to, body)
}

// encodeAsked encodes the payload of an Ask as its registered type.
func (p *Pump) encodeAsked(payload any) ([]byte, error) {
	pt, err := p.payloadTypeOf(payload)
	if err != nil {
		return nil, err
	}
	return pt.AppendPayload(nil, payload)
}

// AskOn is Ask on the conversation whose id is thread — the Conversation
// of an earlier answer — continuing it (live or ended, as an outside party
// continues one: a listener finds the conversation's history); a thread
// id the pump never used begins a new conversation on it. A turn that
// arrives while one of the conversation is in flight waits for it to
// complete. One Ask waits on a conversation at a time: another meanwhile
// is ErrAskPending.
func (p *Pump) AskOn(ctx context.Context, thread, from, to string, payload any) (Event, error) {
	if !stage.IsThreadID(thread) {
		return Event{}, fmt.Errorf("pump: ask on %q: %w", thread, ErrBadThread)
	}
	body, err := p.encodeAsked(payload)
	if err != nil {
		return Event{}, err
	}
	return p.askXML(ctx, thread, from, to, body)
}

// Errors of AskOn.
var (
	// ErrBadThread: the thread is not a lower-case UUID v4.
	ErrBadThread = errors.New("not a thread id")
	// ErrAskPending: another Ask waits on the conversation.
	ErrAskPending = errors.New("pump: another ask waits on this conversation")
)

// AskXML is Ask for a payload already encoded: one XML element that
// declares its own namespace (xmlns="" for none), such as a transport
// builds from JSON with codec.AppendJSON.
func (p *Pump) AskXML(ctx context.Context, from, to string, payload []byte) (Event, error) {
	return p.askXML(ctx, stage.NewThreadID(), from, to, payload)
}

// AskXMLOn is AskOn for a payload already encoded (see AskXML): a
// transport that mints the conversation's id itself knows it before the
// first message, to follow the conversation while it waits.
func (p *Pump) AskXMLOn(ctx context.Context, thread, from, to string, payload []byte) (Event, error) {
	if !stage.IsThreadID(thread) {
		return Event{}, fmt.Errorf("pump: ask on %q: %w", thread, ErrBadThread)
	}
	return p.askXML(ctx, thread, from, to, payload)
}

// askXML is AskXML on thread.
func (p *Pump) askXML(ctx context.Context, thread, from, to string, payload []byte) (Event, error) {
	p.asks.once.Do(func() { p.Watch(OutletFunc(p.asks.observe)) })
	a := &asker{done: make(chan struct{})}
	if _, pending := p.asks.m.LoadOrStore(thread, a); pending {
		return Event{}, fmt.Errorf("%w: %s", ErrAskPending, thread)
	}
	defer p.asks.m.Delete(thread)
	// The injection is not cut short by ctx: once it returns, the
	// conversation is known and can be killed (a cancel while it waited
	// would leave a conversation running that nobody kills). Admission
	// bounds the wait (Options.AdmitWait).
	injCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), askInjectTimeout)
	conv, err := p.SendEnvelope(injCtx, Envelope{From: from, To: to, Thread: thread, Payload: payload}, a)
	cancel()
	if err != nil {
		return Event{}, err
	}
	if conv != thread {
		if _, pending := p.asks.m.LoadOrStore(conv, a); pending {
			// Its answer still comes to a (its outlet); the other
			// Ask's bookkeeping of the conversation is left alone.
			p.log.Warn("ask: another ask waits on the conversation", "thread", conv)
		} else {
			defer p.asks.m.Delete(conv)
		}
	}
	asked.Accepted(ctx, conv) // it can be cancelled or killed from now on
	select {
	case <-a.done:
	case <-ctx.Done():
		if asked.Keep(ctx) {
			p.log.Debug("ask stopped waiting, conversation left running", "thread", conv, "listener", to,
				"cause", context.Cause(ctx))
			return Event{}, fmt.Errorf("pump: ask %s: %w", to, context.Cause(ctx))
		}
		if _, err := p.Kill(conv); err == nil {
			p.log.Info("ask ended early, conversation killed", "thread", conv, "listener", to,
				"cause", context.Cause(ctx))
		}
		return Event{}, fmt.Errorf("pump: ask %s: %w", to, context.Cause(ctx))
	}
	return a.answer(from)
}

// KeepOnCancel returns ctx marked for Ask (and AskOn, AskXML, AskXMLOn):
// an Ask under it, or under a context derived from it, whose context ends
// before the answer only stops waiting — it returns the context's cause, as
// always — and leaves its conversation running instead of killing it. The
// conversation goes on to its answer, which is journaled and delivered to
// its listeners as if the Ask still waited (an answer addressed to the
// asker reaches no one); it can be followed by its id (Watch, the
// journal), cancelled or killed, and continued once it completed (AskOn).
func KeepOnCancel(ctx context.Context) context.Context { return asked.WithKeep(ctx) }

// askers are the conversations Ask waits on, by conversation id. One
// watcher of the pump's events, added on the first Ask, records the
// messages they deliver.
type askers struct {
	once sync.Once
	m    sync.Map // conversation → *asker
}

// observe records the last message delivered in each asked conversation,
// and its dead letters. Watchers see a message before the durability gate
// lets its conversation's completion reach the asker, so the last one is
// known by then.
func (s *askers) observe(e Event) {
	switch e.Kind {
	case EventMessage:
	case EventDeadLetter:
		s.strayFailure(e, "")
		return
	default:
		return
	}
	v, ok := s.m.Load(e.Conversation)
	if !ok {
		return
	}
	a := v.(*asker)
	a.mu.Lock()
	a.last = &e
	a.stray = nil // the conversation went on after it
	a.mu.Unlock()
}

// strayFailure records a failure inside an asked conversation, one that
// never reaches the asker's outlet: a <huh> or SystemError the pump sends to
// one of its listeners (a message it sent was refused, its answer could not
// be delivered), or a dead letter. detail is what the pump knows beyond the
// canned text (the listener's xmlpipe.DeliveryError.Detail). Unless the
// conversation goes on afterwards (the listener's error handler recovers),
// it is why the conversation failed.
func (s *askers) strayFailure(e Event, detail string) {
	v, ok := s.m.Load(e.Conversation)
	if !ok {
		return
	}
	if detail != "" {
		e.Diagnostics = append(slices.Clip(e.Diagnostics), detail)
	}
	a := v.(*asker)
	a.mu.Lock()
	a.stray = &e
	a.mu.Unlock()
}

// asker collects the events of one asked conversation; it is the
// conversation's outlet.
type asker struct {
	mu      sync.Mutex
	reply   *Event
	last    *Event
	failure *Event
	// stray is the last failure inside the conversation (strayFailure)
	// with no message delivered after it.
	stray *Event
	// killed is set when the conversation completed because Kill stopped it.
	killed bool
	// cancelled is set when it completed because Cancel stopped its answer.
	cancelled bool
	// stopped is set when the pump shut down before the conversation
	// completed (askers.stop): why it never will here.
	stopped error
	done    chan struct{}
	closed  bool
}

// stop ends the wait of every Ask still waiting once the pump has shut
// down: their conversations will not complete in this pump (an immediate
// shutdown leaves their messages in the journal for the next start, a
// drain that timed out gave them up). cause is why (ErrShutdown for an
// immediate shutdown), wrapped with ErrClosed.
func (s *askers) stop(cause error) {
	err := ErrClosed
	if cause != nil {
		err = fmt.Errorf("%w: %w", ErrClosed, cause)
	}
	s.m.Range(func(_, v any) bool {
		a := v.(*asker)
		a.mu.Lock()
		if !a.closed {
			a.stopped = err
			a.closed = true
			close(a.done)
		}
		a.mu.Unlock()
		return true
	})
}

// Deliver implements Outlet for the conversation's own events.
func (a *asker) Deliver(e Event) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch e.Kind {
	case EventReply:
		if a.reply == nil {
			a.reply = &e
		}
	case EventHuh, EventDeadLetter, EventSystemError:
		if a.failure == nil {
			a.failure = &e
		}
	case EventComplete:
		a.killed = a.killed || e.Error == KilledReason
		a.cancelled = a.cancelled || e.Error == CancelledReason
		if !a.closed {
			a.closed = true
			close(a.done)
		}
	}
}

// answer is the completed conversation's final answer (see Ask).
func (a *asker) answer(from string) (Event, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.reply != nil:
		return *a.reply, nil
	case a.cancelled:
		return Event{}, ErrCancelled
	case a.failure != nil:
		return Event{}, askFailed(*a.failure)
	case a.killed:
		return Event{}, ErrConversationKilled
	case a.stray != nil:
		return Event{}, askFailed(*a.stray)
	case a.stopped != nil:
		return Event{}, fmt.Errorf("pump: the conversation did not complete: %w", a.stopped)
	case a.last == nil || a.last.From == from:
		// Only the message asked was delivered (an external sender's name
		// is never a listener's).
		return Event{}, ErrNoAnswer
	}
	return *a.last, nil
}

// askFailed is the error of an Ask whose conversation failed with e: an
// *AskError, wrapped with ErrClosed when the pump's shutdown caused the
// failure (a graceful drain that ran out cancelled its handler or dropped
// its message, an immediate shutdown) — the conversation did not complete
// because the pump stopped, as Ask's doc says.
func askFailed(e Event) error {
	err := &AskError{Event: e}
	if errors.Is(e.Cause, ErrShutdown) {
		return fmt.Errorf("pump: the conversation did not complete: %w: %w", ErrClosed, err)
	}
	return err
}
