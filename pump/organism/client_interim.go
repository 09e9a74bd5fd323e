package organism

import (
	"log/slog"
	"runtime/debug"
	"sync"

	"github.com/xml-pipeline/xmlpipe/registry"
)

// Interim is an LLM agent's interim text in a conversation: text its model
// wrote that is no answer — beside its tool calls ("Let me compute
// that."), before its messages to peers (XML mode), or in a turn its loop
// control continued. The console prints it
// as the agent's line; an Ask caller sees it through WithInterim.
type Interim struct {
	// Conversation is the conversation's id (the answer's Conversation).
	Conversation string
	// Thread is the agent's thread within it.
	Thread string
	// Agent is the agent that wrote it.
	Agent string
	// Text is what it wrote, loop-control tokens stripped; never blank.
	Text string
}

// AskOption configures one Ask, AskText, Continue or ContinueText.
type AskOption func(*askOptions)

// askOptions is what AskOptions set.
type askOptions struct {
	interim      func(Interim)
	conversation func(string)
}

// OnConversation has fn called once with the asked conversation's id, as
// soon as its message was accepted and while the Ask still waits for the
// answer: the id to cancel its answer (o.Pump.Cancel: the conversation
// goes on and may be continued; the Ask returns xmlpipe.ErrCancelled) or
// kill it for good (o.Pump.Kill: xmlpipe.ErrConversationKilled) from
// another goroutine — a user's stop button, say. It is the answer's
// Conversation. fn runs on the Ask's goroutine, before the Ask waits:
// it must return quickly and must not wait for that Ask. It is not called
// when the message was refused.
func OnConversation(fn func(conversation string)) AskOption {
	return func(o *askOptions) { o.conversation = fn }
}

// WithInterim has fn called with every interim text an agent writes in the
// asked conversation while the Ask waits (an agent its callable calls
// writes in a conversation of its own): in order, one call at a time, on
// the agent's goroutine — so before the Ask returns the answer the text
// precedes. fn should return quickly (the agent waits for it) and must not
// wait for the Ask it belongs to; it is not called once the Ask returned. A
// panic in fn is logged and recovered: the agent's turn goes on.
func WithInterim(fn func(Interim)) AskOption {
	return func(o *askOptions) { o.interim = fn }
}

// WatchInterim has fn called with every interim text an agent writes in
// conversation, as WithInterim does for an Ask, until stop runs (after
// stop returns, fn is not called again): for a transport that asks through
// Pump.AskXMLOn with the conversation's id minted beforehand (the MCP
// server's progress notifications). A conversation already watched keeps
// its watcher, and fn is never called.
func (o *Organism) WatchInterim(conversation string, fn func(Interim)) (stop func()) {
	return o.interims.watch(conversation, fn)
}

// interimWatcher is the WithInterim callback of one asked conversation.
// mu serialises the calls and the watcher's end, so no call runs once the
// Ask has returned.
type interimWatcher struct {
	mu   sync.Mutex
	fn   func(Interim)
	done bool
}

// interimHub routes agents' interim text to the Asks watching their
// conversations. The zero value is ready.
type interimHub struct {
	m sync.Map // conversation id → *interimWatcher
}

// watch has fn called for conv's interim text until the returned stop
// runs. A conversation already watched keeps its watcher (one Ask waits on
// a conversation at a time: the other fails with pump.ErrAskPending).
func (h *interimHub) watch(conv string, fn func(Interim)) (stop func()) {
	if fn == nil {
		return func() {}
	}
	w := &interimWatcher{fn: fn}
	if _, taken := h.m.LoadOrStore(conv, w); taken {
		return func() {}
	}
	return func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
		h.m.CompareAndDelete(conv, w)
	}
}

// show hands agent's interim text on thread to the watcher of the
// conversation the thread belongs to, if any. A watcher that panics is
// logged to log and costs its caller that text, never the agent its turn.
func (h *interimHub) show(threads *registry.Threads, log *slog.Logger, agent, thread, text string) {
	conv := thread
	if threads != nil {
		if root := threads.Root(thread); root != "" {
			conv = root
		}
	}
	v, ok := h.m.Load(conv)
	if !ok {
		return
	}
	w := v.(*interimWatcher)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return
	}
	defer func() {
		if r := recover(); r != nil && log != nil {
			log.Error("a WithInterim callback panicked; the agent goes on", "agent", agent, "thread", thread,
				"panic", r, "stack", string(debug.Stack()))
		}
	}()
	w.fn(Interim{Conversation: conv, Thread: thread, Agent: agent, Text: text})
}
