// Package mcp serves an organism's listeners as Model Context Protocol tools
// (github.com/modelcontextprotocol/go-sdk): each listener is a tool whose
// input schema is derived from its payload type; each call becomes a message
// through the pump, with all its gates, and is answered with the
// conversation's final answer — the reply to the caller if there is one, else
// the last message delivered before the conversation completed. A bad call
// (arguments that do not fit, a rejected message, a <huh>, a tool's refusal)
// and a call that ends without an answer (the agent halted, the
// conversation killed or its answer cancelled, a constitution's refusal or
// a human's denial, the timeout) is an MCP tool error (isError) whose text
// says which, so the client's model can correct itself or tell its user. A
// listener that declares its response (pump.Listener.Response) is a tool
// with an output schema, and its answers' structured content is typed to
// fit it.
//
// Arguments are checked against the tool's advertised input schema
// (gen.JSONSchema of the payload type) and converted by codec.AppendJSON:
// nothing is coerced, presence decides which fields are written. A call the
// client cancels (notifications/cancelled) kills its conversation and is
// not answered on stdio (over streamable HTTP the SDK answers it with the
// tool error naming the cancel). ServeStdio serves newline-delimited JSON-RPC that survives
// bad lines; HTTPHandler the streamable HTTP transport.
package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/codec"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// DefaultTimeout bounds one tool call.
const DefaultTimeout = 2 * time.Minute

// DefaultSessionIdle is how long a streamable HTTP session may go without a
// request before it is closed.
const DefaultSessionIdle = time.Hour

// DefaultMaxSessions bounds the streamable HTTP sessions open at once.
const DefaultMaxSessions = 1024

// defaultEvictIdle is how long a streamable HTTP session must have gone
// without a request, none running, to be closed to make room for a new one
// at a session bound: one opened a moment ago is still connecting (its
// initialized notification, its stream on their way).
const defaultEvictIdle = 10 * time.Second

// DefaultMaxSessionsPerAddr bounds the streamable HTTP sessions open at
// once from one client address (host).
const DefaultMaxSessionsPerAddr = 64

// Options configure a Bridge.
type Options struct {
	// From is the sender name of the calls (default "mcp").
	From string
	// Timeout bounds one call (default DefaultTimeout); a conversation
	// without an answer by then is killed.
	Timeout time.Duration
	// Logger receives the bridge's logs (default slog.Default()).
	Logger *slog.Logger
	// Version is reported to clients (default "dev").
	Version string
	// SessionIdle closes a streamable HTTP session that has had no request
	// for that long (default DefaultSessionIdle; negative: never). A call
	// running keeps its session open.
	SessionIdle time.Duration
	// MaxSessions bounds the streamable HTTP sessions open at once
	// (default DefaultMaxSessions; negative: no bound), so clients opening
	// sessions without closing them cannot grow the process for as long
	// as they stay idle. An initialize that would open one more closes the
	// session idle longest (its client's next request is answered 404,
	// which tells it to open a new session); with none idle (a call
	// running, a stream open, a request in the last 10 s) it is answered
	// 503 with Retry-After.
	MaxSessions int
	// MaxSessionsPerAddr bounds the streamable HTTP sessions open at once
	// from one client host (its connection's address, whatever its ports;
	// never a forwarding header) (default DefaultMaxSessionsPerAddr;
	// negative: no bound), so one client cannot take every MaxSessions
	// slot. An initialize from a host that has that many open closes the
	// one of them idle longest (its client's next request is answered
	// 404, which tells it to open a new session); with none of them idle
	// (as for MaxSessions) it is answered 503 with Retry-After.
	// Behind a reverse proxy every client has the proxy's address: raise
	// it, or bound clients at the proxy.
	MaxSessionsPerAddr int
	// Profile is the security profile the bridge's clients act under:
	// only the listeners it reaches are served as tools (the others do not
	// exist for them), and every call's conversation runs under it. ""
	// for none: every listener.
	Profile string
	// Interim, when set, follows a conversation's interim text — what an
	// agent writes beside its tool calls, which no answer carries
	// (organism.Organism.WatchInterim): a call whose request carries a
	// progressToken gets each text as a progress notification
	// (notifications/progress, the text its message), before its result.
	// nil: none is sent.
	Interim func(conversation string, fn func(organism.Interim)) (stop func())
	// Refused, when set, names the listeners that refuse every call from
	// the bridge's clients (the core meta listeners the meta: flags shut
	// them out of: organism.Organism.MetaRefuses): they are not served as
	// tools, so a client is never offered one no call of which succeeds.
	Refused func(listener string) bool
}

// Bridge turns MCP tool calls into messages through a pump.
type Bridge struct {
	p    *pump.Pump
	opts Options

	mu     sync.Mutex
	calls  map[*callCancel]struct{}
	closed bool
	// life ends with Close: the HTTP transport's standalone streams (GET)
	// end with it.
	life    context.Context
	endLife context.CancelFunc

	schemas sync.Map // *xmlpipe.PayloadType → *toolSchema

	// evictIdle is how long a streamable HTTP session must have been idle
	// to be closed to make room for a new one (defaultEvictIdle).
	evictIdle time.Duration
}

// callCancel cancels one running call (with a cause); origin names the
// HTTP request and session it came with.
type callCancel struct {
	cancel context.CancelCauseFunc
	origin origin
}

// New builds a bridge over p; Close ends its calls.
func New(p *pump.Pump, opts Options) *Bridge {
	if opts.From == "" {
		opts.From = "mcp"
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.SessionIdle == 0 {
		opts.SessionIdle = DefaultSessionIdle
	}
	if opts.MaxSessions == 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	if opts.MaxSessionsPerAddr == 0 {
		opts.MaxSessionsPerAddr = DefaultMaxSessionsPerAddr
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	life, endLife := context.WithCancel(context.Background())
	return &Bridge{p: p, opts: opts, calls: map[*callCancel]struct{}{}, life: life, endLife: endLife,
		evictIdle: defaultEvictIdle}
}

// Close cancels the calls still running (their conversations are killed)
// and ends the HTTP transport's standalone streams, so that an HTTP server
// serving HTTPHandler can shut down at once. It may be called more than
// once.
func (b *Bridge) Close() {
	b.mu.Lock()
	was := b.closed
	b.closed = true
	b.mu.Unlock()
	if was {
		return
	}
	b.endLife()
	b.cancelCalls(ErrClosed)
}

// Errors a call's answer names as why it ended early.
var (
	// ErrClosed: the bridge closed (the server is shutting down).
	ErrClosed = errors.New("the MCP server is shutting down")
	// ErrCancelled: the client cancelled the call.
	ErrCancelled = errors.New("cancelled by the client")
	// errTimeout: Options.Timeout passed.
	errTimeout = errors.New("call timeout")
)

// cancelCalls cancels every running call with cause.
func (b *Bridge) cancelCalls(cause error) {
	b.mu.Lock()
	calls := make([]*callCancel, 0, len(b.calls))
	for c := range b.calls {
		calls = append(calls, c)
	}
	b.mu.Unlock()
	for _, c := range calls {
		c.cancel(cause)
	}
}

// Server builds an MCP server whose tools are the pump's listeners (the
// organism's own system.* listeners excepted) that Options.Profile
// reaches. The tool list follows the routing table until the bridge
// closes: a listener added, removed or replaced while the server runs (a
// reload, an OOB registration, a federation import) is offered, withdrawn
// or updated, and the clients are told (notifications/tools/list_changed).
func (b *Bridge) Server() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "xmlpipe-" + b.p.Organism(), Version: b.opts.Version},
		&sdk.ServerOptions{Logger: b.opts.Logger})
	ts := &toolSet{b: b, s: s, have: map[string]tool{}}
	changed := b.p.RoutesChanged()
	ts.sync()
	go ts.follow(changed)
	return s
}

func toolError(format string, args ...any) *sdk.CallToolResult {
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

// Call sends one message to listener with the arguments as its payload and
// waits for the conversation's answer. Arguments that do not fit the
// advertised schema are a tool error naming the field. When ctx ends (the
// client cancelled), the call's Options.Timeout passes or the bridge
// closes, the conversation is killed and the answer says why. rt is the
// listener's declared response (nil: none): the answer's structured
// content is then typed by it (see outputSchema), and an answer that is
// not one is a tool error.
func (b *Bridge) Call(ctx context.Context, listener string, pt, rt *xmlpipe.PayloadType, args []byte) *sdk.CallToolResult {
	return b.call(ctx, listener, pt, rt, args, nil)
}

// call is Call that hands progress (when not nil) the conversation's
// interim text (Options.Interim) while it waits, never after it returns.
func (b *Bridge) call(ctx context.Context, listener string, pt, rt *xmlpipe.PayloadType, args []byte,
	progress func(text string)) *sdk.CallToolResult {
	body, err := codec.AppendJSON(nil, pt.Model(), args, codec.JSONOptions{EmptyNS: true})
	if err != nil {
		return toolError("invalid arguments for %s: %v", listener, err)
	}
	if err := b.schema(listener, pt).check(args); err != nil {
		return toolError("invalid arguments for %s: %v", listener, err)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	cc := &callCancel{cancel: cancel, origin: originOf(ctx)}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return toolError("%v", ErrClosed)
	}
	b.calls[cc] = struct{}{}
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.calls, cc)
		b.mu.Unlock()
	}()
	ctx, cancelTimeout := context.WithTimeoutCause(ctx, b.opts.Timeout, errTimeout)
	defer cancelTimeout()
	// Ask kills the conversation when ctx ends first (the client
	// cancelled, the timeout passed or the bridge closed).
	conv := stage.NewThreadID()
	if progress != nil && b.opts.Interim != nil {
		stop := b.opts.Interim(conv, func(i organism.Interim) { progress(i.Text) })
		defer stop()
	}
	ev, err := b.p.AskXMLOn(pump.WithProfile(ctx, b.opts.Profile), conv, b.opts.From, listener, body)
	if err == nil {
		return b.answer(ev, listener, rt)
	}
	// A refusal of the call's own message; a conversation that failed
	// after it (an *AskError) may wrap a listener's refused output's.
	if f, ok := errors.AsType[*failure.Failure](err); ok && !isAskError(err) {
		b.opts.Logger.Info("mcp: call rejected", "listener", listener, "error", f)
		return toolError("%s", rejectedText(f))
	}
	if ctx.Err() != nil {
		return b.ended(ctx, listener)
	}
	if e, ok := errors.AsType[*pump.AskError](err); ok {
		b.opts.Logger.Info("mcp: call failed", "listener", listener, "error", e)
		return toolError("%s", failedText(e.Event, b.opts.From))
	}
	if text := endedText(err); text != "" {
		b.opts.Logger.Info("mcp: call ended without an answer", "listener", listener, "error", err)
		return toolError("%s: %s", listener, text)
	}
	if errors.Is(err, pump.ErrNoAnswer) {
		// A tool with an output schema owes structured content: without
		// an answer it has none, so the call failed.
		return &sdk.CallToolResult{IsError: rt != nil, Content: []sdk.Content{&sdk.TextContent{
			Text: listener + " handled the message and ended the conversation without an answer"}}}
	}
	b.opts.Logger.Warn("mcp: call not sent", "listener", listener, "error", err)
	return toolError("%s", sendText(err))
}

// ended is the answer of a call whose context ended before its answer.
func (b *Bridge) ended(ctx context.Context, listener string) *sdk.CallToolResult {
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errTimeout):
		return toolError("no answer from %s within %s", listener, b.opts.Timeout)
	case errors.Is(cause, context.Canceled):
		return toolError("%s: %v", listener, ErrCancelled)
	default:
		return toolError("%s: %v", listener, cause)
	}
}

// mcpContent is a payload that is MCP content already: a mounted MCP tool's
// answer (an *mcpclient.ToolResult; the server does not import the listener).
type mcpContent interface {
	CallToolResult() *sdk.CallToolResult
}

// failedAnswer is a payload that reports, in place of an answer, that the
// call could not be done: an agent's halt (an *llm.Halted; the server does
// not import the listener). Its text is the tool error.
type failedAnswer interface {
	FailedAnswer() string
}

// answer renders the conversation's final answer (pump.Pump.Ask) of a call
// of listener, whose declared response is rt (nil: none). The text content
// is the one leaf's text or the payload's XML; the structured content is
// typed by rt when there is one, else every leaf as text (Answer.Fields).
func (b *Bridge) answer(e pump.Event, listener string, rt *xmlpipe.PayloadType) *sdk.CallToolResult {
	switch v := e.Payload.(type) {
	case mcpContent:
		return v.CallToolResult() // a mounted tool's answer: its content as it came
	case *xmlpipe.Refusal:
		// The pump's refusal of the call: a constitution's rule, a human's
		// denial, an approval that expired.
		return toolError("%s", v.Summary())
	case failedAnswer:
		if text := v.FailedAnswer(); text != "" {
			return toolError("%s", text)
		}
	}
	payload, err := PayloadOf(e.Envelope)
	if err != nil {
		return toolError("%v", err)
	}
	a, err := Render(payload)
	if err != nil {
		return toolError("%v", err)
	}
	if a.Error != "" {
		// A refusal in the declared response (run_command's ExitCode -1,
		// ops' OK false) is typed like any answer of it, so a client
		// decoding structuredContent by the outputSchema reads it too.
		sc := any(a.Fields)
		if rt != nil {
			if typed, err := structured(rt, a); err == nil {
				sc = typed
			}
		}
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: a.Error}},
			StructuredContent: sc}
	}
	if rt == nil {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: a.Text}}, StructuredContent: a.Fields}
	}
	sc, err := structured(rt, a)
	if err != nil {
		return toolError("%s %v: %s", listener, err, a.Text)
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: a.Text}}, StructuredContent: sc}
}
