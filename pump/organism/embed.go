package organism

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/internal/asked"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// AskFrom is the sender of the messages Ask sends: what a handler sees in
// Metadata.From for them.
const AskFrom = "app"

// Listener is a listener written in Go that a program embedding the
// organism adds beside the listeners of its configuration
// (Options.Listeners). Build one with Func. It is registered when the
// organism is assembled, and a reload leaves it alone (a reloaded
// configuration with an entry of its name is refused). The configuration's
// peers lists may name it — Load reads the file knowing the names of
// Options.Listeners, as config.LoadWith and config.ParseWith do; config.Load
// and config.Parse know only the file's own listeners — but no entry of
// the file is it: for organism.yaml to have a Go listener as an entry,
// register it with catalog.Register instead.
type Listener struct {
	// Name is the registered name: the <to> of messages for it and the
	// <from> of its output. Required; unique among the organism's
	// listeners, case-insensitively; no spaces or control characters, as
	// in organism.yaml (config.CheckListenerName).
	Name string
	// Description leads the tool prompt other agents see for it. Required.
	Description string
	// Payload is the Go struct type of the messages it takes; its XSD is
	// derived from the type (package gen).
	Payload reflect.Type
	// Handler handles them: the pump decodes every message for the
	// listener into a *Payload first. It may implement
	// xmlpipe.ErrorHandler.
	Handler xmlpipe.Handler
	// Timeout bounds one handler call (0: the default, 60 s; negative:
	// none). See pump.Listener.Timeout.
	Timeout time.Duration
	// Workers is how many messages it handles at once (0: up to
	// max_concurrent_handlers; negative is refused).
	Workers int
}

// Func is the Listener called name whose payload type is T and whose
// handler is handler:
//
//	organism.Func("reverser", "Reverses text", func(ctx context.Context, p *Reverse, md xmlpipe.Metadata) (xmlpipe.Response, error) {
//		return xmlpipe.Respond(&Reversed{Text: reverse(p.Text)}), nil
//	})
func Func[T any](name, description string, handler func(ctx context.Context, p *T, md xmlpipe.Metadata) (xmlpipe.Response, error)) Listener {
	l := Listener{Name: name, Description: description, Payload: reflect.TypeFor[T]()}
	if handler != nil {
		l.Handler = xmlpipe.Typed(handler)
	}
	return l
}

// ErrListener reports an Options.Listeners entry that cannot be registered.
var ErrListener = errors.New("organism: invalid listener")

// pumpListener checks l and builds the pump's listener of it.
func (l Listener) pumpListener() (pump.Listener, error) {
	switch {
	case strings.TrimSpace(l.Name) == "":
		return pump.Listener{}, fmt.Errorf("%w: no name", ErrListener)
	case config.CheckListenerName(l.Name) != nil:
		return pump.Listener{}, fmt.Errorf("%w: %w", ErrListener, config.CheckListenerName(l.Name))
	case strings.TrimSpace(l.Description) == "":
		return pump.Listener{}, fmt.Errorf("%w %s: no description", ErrListener, l.Name)
	case l.Handler == nil:
		return pump.Listener{}, fmt.Errorf("%w %s: no handler", ErrListener, l.Name)
	case l.Payload == nil || l.Payload.Kind() != reflect.Struct:
		return pump.Listener{}, fmt.Errorf("%w %s: payload type %v is not a struct", ErrListener, l.Name, l.Payload)
	case l.Workers < 0:
		return pump.Listener{}, fmt.Errorf("%w %s: workers must not be negative, got %d", ErrListener, l.Name, l.Workers)
	}
	pt, err := xmlpipe.NewPayloadType(l.Payload)
	if err != nil {
		return pump.Listener{}, fmt.Errorf("%w %s: %w", ErrListener, l.Name, err)
	}
	return pump.Listener{Name: l.Name, Description: l.Description, Payload: pt, Handler: l.Handler,
		Timeout: l.Timeout, Workers: l.Workers}, nil
}

// goListenerNames returns the names of listeners written in Go, which a
// configuration may name beside its own (config.LoadWith).
func goListenerNames(ls []Listener) []string {
	names := make([]string, 0, len(ls))
	for _, l := range ls {
		names = append(names, l.Name)
	}
	return names
}

// registerGo registers the embedding program's listeners (Options.Listeners)
// and notes them among the listeners a reload leaves alone. A name taken by
// an entry of cfg is refused at that entry's line.
func registerGo(p *pump.Pump, cfg *config.Organism, ls []Listener, extra map[string]bool) []error {
	var errs []error
	for i, l := range ls {
		pl, err := l.pumpListener()
		if err == nil {
			err = p.AddListener(pl)
		}
		if err != nil {
			if at := yamlEntryAt(cfg, l.Name); at != "" && errors.Is(err, pump.ErrDuplicateName) {
				err = fmt.Errorf("%w by the entry at %s", err, at)
			}
			errs = append(errs, fmt.Errorf("Options.Listeners[%d]: %w", i, err))
			continue
		}
		extra[unitKey(l.Name)] = true
	}
	return errs
}

// yamlEntryAt says where cfg declares the listener called name
// (case-insensitively) — "organism.yaml:36" — or "" when no entry of cfg
// does.
func yamlEntryAt(cfg *config.Organism, name string) string {
	for j, lc := range cfg.Listeners {
		if unitKey(lc.Name) == unitKey(name) {
			return cfg.Pos(fmt.Sprintf("listeners[%d].name", j)).String()
		}
	}
	return ""
}

// Ask sends payload — a Go value of a listener's payload type — from
// AskFrom to the listener named to on a new conversation, and returns the
// conversation's final answer once it completes: the reply to the sender
// when a listener answered it with xmlpipe.Respond, else the last message
// delivered (pump.Pump.Ask). The answer's Payload is the decoded Go value
// (*Reversed, say) and From the listener that sent it.
//
// Its errors, for errors.Is and errors.As:
//   - a message the organism refused is a *failure.Failure; one it had no
//     room for (its admission budget, max_in_flight, or max_queue_wait at
//     a busy listener) matches pump.ErrBusy and is a *pump.BusyError whose
//     RetryAfter says when to ask again;
//   - a conversation that failed is a *pump.AskError, which finds the
//     failure's cause (xmlpipe.ErrHandlerTimeout, failure.ErrNoRoute, a
//     handler's own error — through a *pump.RelayedError when the listener
//     asked called one that failed);
//   - one that ended without an answer is pump.ErrNoAnswer; one whose
//     answer was cancelled (o.Pump.Cancel) xmlpipe.ErrCancelled, one killed
//     (o.Pump.Kill) xmlpipe.ErrConversationKilled — OnConversation tells
//     its id in time;
//   - when ctx ends first, the conversation is killed and the error is an
//     *AskEndedError naming it (errors.Is still finds the context's error);
//     under pump.KeepOnCancel(ctx) the Ask only stops waiting and the
//     conversation runs on;
//   - when the organism shuts down first the error wraps pump.ErrClosed, as
//     it does once the organism was shut down.
//
// The organism must be started (before Start the error wraps
// pump.ErrNotStarted), and no listener of it may be called AskFrom.
// Options: WithInterim shows the agents' interim text as it is written,
// OnConversation tells the conversation's id while the Ask waits.
func (o *Organism) Ask(ctx context.Context, to string, payload any, opts ...AskOption) (pump.Event, error) {
	return o.Continue(ctx, "", to, payload, opts...)
}

// AskText is Ask with the message built from text, as the console builds
// "@to text": the text goes in the text field of the listener's payload —
// so a program can ask a YAML agent, whose payload type it cannot name.
// The answer's text, when its text field is all it holds, is PayloadText(ev.Payload).
// An unknown listener is ErrUnknownListener, one whose payload has no text
// field ErrNoTextField.
func (o *Organism) AskText(ctx context.Context, to, text string, opts ...AskOption) (pump.Event, error) {
	return o.ContinueText(ctx, "", to, text, opts...)
}

// Continue is Ask on the conversation an earlier answer belongs to
// (its Conversation): the listener gets the conversation's history, as a
// console line or a client's thread_id continues one. A turn sent while
// the conversation's previous one is still in flight waits for it. An empty
// conversation begins a new one, as Ask does; one Continue or Ask waits on
// a conversation at a time (pump.ErrAskPending). It takes Ask's options.
func (o *Organism) Continue(ctx context.Context, conversation, to string, payload any, opts ...AskOption) (pump.Event, error) {
	if err := o.checkRunning(); err != nil {
		return pump.Event{}, err
	}
	var ao askOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&ao)
		}
	}
	if conversation == "" {
		// The new conversation's id is known before its first message, so
		// no interim text of it is missed and an ended call can name it
		// (Pump.Ask mints it the same way).
		conversation = stage.NewThreadID()
	}
	if ao.interim != nil {
		defer o.interims.watch(conversation, ao.interim)()
	}
	ev, err := o.Pump.AskOn(asked.WithAccepted(ctx, ao.conversation), conversation, AskFrom, to, payload)
	switch {
	case err != nil && ctx.Err() != nil && errors.Is(err, context.Cause(ctx)):
		return ev, &AskEndedError{Conversation: conversation, Err: err}
	case errors.Is(err, pump.ErrNotStarted):
		return ev, fmt.Errorf("organism: %w: call Start before asking", err)
	}
	return ev, err
}

// ContinueText is Continue with the message built from text, as AskText
// builds it.
func (o *Organism) ContinueText(ctx context.Context, conversation, to, text string, opts ...AskOption) (pump.Event, error) {
	if err := o.checkRunning(); err != nil {
		return pump.Event{}, err
	}
	l, ok := o.Pump.Lookup(to)
	if !ok || l.Payload == nil {
		return pump.Event{}, fmt.Errorf("%w: %s", ErrUnknownListener, to)
	}
	v, err := NewPayload(l.Payload.GoType(), text)
	if err != nil {
		return pump.Event{}, fmt.Errorf("%s: %w", to, err)
	}
	return o.Continue(ctx, conversation, l.Name, v, opts...)
}
