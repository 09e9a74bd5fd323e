package pump

import (
	"strings"
	"time"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// Listener is one registered capability: a payload contract plus a handler.
type Listener struct {
	// Name is the registered name: routing target, <from> of its outputs and a
	// thread path segment. It may contain dots.
	Name string
	// Description is the one-line blurb used in prompts and listings.
	Description string
	// Payload is the payload contract.
	Payload *xmlpipe.PayloadType
	// Response is the contract of the answer the listener gives its
	// caller, when it declares one (a wasm listener's or an agent's
	// response:); nil when it does not. The MCP bridge advertises it as the
	// tool's output schema.
	Response *xmlpipe.PayloadType
	// Handler handles decoded payloads. It may implement xmlpipe.ErrorHandler.
	Handler xmlpipe.Handler
	// Agent marks an LLM agent: own name in metadata, peer enforcement, usage
	// instructions, unique root tag.
	Agent bool
	// Peers is an agent's outbound allow-list (listener or gateway names).
	Peers []string
	// Broadcast allows several listeners to share this root tag.
	Broadcast bool
	// Prompt is an agent's system prompt.
	Prompt string
	// Workers is how many messages the listener handles at once (0: the pump's
	// default — max_concurrent_per_agent for agents, max_concurrent_handlers otherwise).
	Workers int
	// QueueSize bounds the listener's pipeline queue (0: the pump's default).
	QueueSize int
	// Remote marks a handler that mostly waits on another party (a
	// federation gateway's imported capability waiting for the peer): its
	// handlers run outside max_concurrent_handlers, bounded by Workers
	// alone, so calls waiting on a slow or unreachable peer cannot starve
	// the organism's own listeners.
	Remote bool
	// WaitsOnConversations marks a handler that only waits for other
	// conversations of this organism to answer (a callable's call, which
	// waits on its callee's conversation): a halt stops its queue but not
	// its running calls — it stops the work itself, where it runs, in those
	// conversations' listeners, and the calls, answered after Unhalt, end
	// as ever. Cancelled, such a call would give those conversations up,
	// and its handling after Unhalt begin them again from the start.
	WaitsOnConversations bool
	// MaxMessagesPerTurn caps the messages one Raw output of the listener
	// (an LLM agent's reply) may send: output holding more sends none and
	// the listener gets a SystemError saying the limit (0: the pump's
	// Options.MaxMessagesPerTurn).
	MaxMessagesPerTurn int
	// Timeout bounds one handler call: when it fires, the handler's context
	// is cancelled with a cause wrapping ErrHandlerTimeout that names the
	// listener and the duration ("listener run_command: handler timeout
	// 2m0s"), whatever the handler answers afterwards is discarded, and the
	// sender gets a <huh> (the log and the journal say which timeout fired).
	// 0 takes the pump's default (Options.AgentTimeout for agents, none for
	// Remote listeners, Options.HandlerTimeout otherwise); negative: none.
	Timeout time.Duration
	// Public lets external messages reach a listener registered with
	// RegisterSystem (the core meta listeners answer callers outside the
	// organism); the organism's other own listeners stay internal. Ordinary
	// listeners are always reachable and ignore it.
	Public bool
	// Profile narrows the threads the listener's messages open (an agent's
	// profile: for the threads it spawns): each gets its parent's profile
	// intersected with this one (registry.NarrowProfile), so the
	// listener's sends reach only what both allow. "" adds no restriction.
	Profile string
}

func lower(s string) string { return strings.ToLower(s) }
