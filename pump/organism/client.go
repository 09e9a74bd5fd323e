package organism

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// Backend errors, shared by every backend so the console can word them.
var (
	// ErrUnknownListener: no listener has the target name.
	ErrUnknownListener = errors.New("unknown listener")
	// ErrNoTextField: the listener's payload has no field the text can go in.
	ErrNoTextField = errors.New("cannot create payload")
	// ErrBadPayload: a JSON or XML payload does not fit the listener's
	// payload type (the error says where).
	ErrBadPayload = errors.New("invalid payload")
)

// Message is what the console sends to a listener, from "console" (or,
// remotely, the session's identity).
type Message struct {
	// Target is the listener's name.
	Target string
	// Text goes in the payload's text field, unless Payload is set: a JSON
	// object of fields (the payload's JSON form, native arrays and objects)
	// or a JSON string holding the payload element's XML — as POST
	// /api/v1/inject takes it.
	Text    string
	Payload json.RawMessage
	// Thread is the conversation the message travels on: a new id begins a
	// conversation, the id of one of the sender's conversations continues
	// it (the listener's history on that thread is kept); "" lets the
	// backend choose a new one.
	Thread string
}

// Sender sends a message and returns the conversation's thread id. A
// message the organism refuses is a *Rejection.
type Sender interface {
	Send(ctx context.Context, m Message) (thread string, err error)
}

// Directory describes the organism.
type Directory interface {
	Listeners(ctx context.Context) ([]ListenerInfo, error)
	Status(ctx context.Context) (Status, error)
}

// ThreadViewer lists live threads and their message history.
type ThreadViewer interface {
	Threads(ctx context.Context) ([]Thread, error)
	// Monitor returns the history of every thread whose id starts with
	// prefix, or of every thread with history when prefix is "*".
	Monitor(ctx context.Context, prefix string) ([]History, error)
}

// Feed streams what the organism says to the console.
type Feed interface {
	// Subscribe calls fn for every Output until cancel is called. fn is
	// called from the organism's goroutines and must not block.
	Subscribe(fn func(Output)) (cancel func())
}

// Backend is everything the console needs from an organism.
type Backend interface {
	Sender
	Directory
	ThreadViewer
	Feed
}

// ListenerInfo describes one registered listener, as a client sees it.
type ListenerInfo struct {
	Name        string
	Description string
	Agent       bool
	Broadcast   bool
	// RootTag is the payload root element ({ns}name when namespaced).
	RootTag string
}

// Status summarises a running organism.
type Status struct {
	Organism  string
	Uptime    time.Duration
	Listeners int
	// Threads is the number of live threads: those of conversations still
	// running. Idle is the number of threads kept after their conversation
	// completed (a client may continue them until they are collected).
	// Slots is the number of messages held in the context buffers.
	Threads, Idle, Slots int
	Processed            int64
	Failed               int64
	InFlight             int
	// Gateways describes each federation gateway on one line ("b:
	// connected to organism-b, 0 queued, 1 open call; imports greeter").
	Gateways []string
	// Halted is the scope of the emergency halt in force ("agents" or
	// "all"; "" while the organism runs): queued messages wait until
	// /resume lifts it.
	Halted string
	// HaltedListeners are the listeners halted one by one (/halt NAME):
	// their messages wait until /resume NAME (or /resume) lifts it.
	HaltedListeners []string
}

// Thread is one live thread, or (Ended) a conversation known only from the
// journal of a durable organism.
type Thread struct {
	ID string
	// Ended marks a conversation that is no longer live (its threads ended,
	// possibly before a restart); its history comes from the journal.
	Ended bool
	// Depth is the length of the thread's call chain (0 when Ended).
	Depth int
	// Slots is the number of messages in the thread's history (for an Ended
	// conversation, its journaled messages).
	Slots int
	// Idle is the time since the thread was last used.
	Idle time.Duration
	// LastFrom and LastTo are the ends of the last message ("" without history).
	LastFrom, LastTo string
}

// History is one thread's message history, oldest first.
type History struct {
	ID    string
	Slots []Slot
}

// Slot is one message of a thread's history.
type Slot struct {
	From, To    string
	PayloadType string
	// Payload is the payload element's canonical XML ("" when unknown).
	Payload string
	Time    time.Time
}

// OutputKind classifies what the organism said to the console.
type OutputKind string

// Output kinds.
const (
	// OutputPrint is a listener's printed output (response-handler), or
	// an LLM agent's interim text (see Interim): what its model wrote
	// beside its tool calls or before its messages to peers, or a turn its
	// loop control continued.
	OutputPrint OutputKind = "print"
	// OutputReply is a reply that pruned back to the console.
	OutputReply OutputKind = "reply"
	// OutputHuh is a failure of one of the console's conversations.
	OutputHuh OutputKind = "huh"
	// OutputComplete says a conversation of the console has nothing in flight.
	OutputComplete OutputKind = "complete"
	// OutputDelta is a piece of the text an LLM agent's model is writing,
	// as it arrives; End marks the end of the model's reply (the agent's
	// answer, if any, follows as its own message). Streamed text is not
	// journaled and may be lost; the message is what counts.
	OutputDelta OutputKind = "delta"
)

// Output is one thing the organism says to the console.
type Output struct {
	Kind OutputKind
	// Conversation is the thread id Send returned; for OutputPrint, the
	// conversation of the printing thread ("" when unknown).
	Conversation string
	// Thread is the printing (OutputPrint) or streaming (OutputDelta) thread
	// ("" otherwise).
	Thread string
	// From is who said it; Text what it said (the canned text for
	// OutputHuh; for OutputComplete, why the conversation ended early —
	// pump.KilledReason — or "").
	From, Text string
	// End marks an OutputDelta that ends the model's reply.
	End bool
	// Profile is the security profile of the streaming thread of an
	// OutputDelta ("" for none), taken when the piece was written: the
	// thread may have ended by the time it is published.
	Profile string
	// Diagnostics are the detailed findings of a failure (shown with --verbose).
	Diagnostics []string
	// Told is, for an OutputHuh of a message the console sent, what the
	// handler that failed wrote for its sender (the text of its
	// *xmlpipe.InputError: a field left empty, a peer organism that
	// could not be reached); "" for none.
	Told string
}

// Rejection is a message the organism refused at ingress: the canned <huh>
// text the sender is told and the detailed diagnostics.
type Rejection struct {
	Huh         string
	Diagnostics []string
}

// Error renders the canned text and the diagnostics.
func (r *Rejection) Error() string {
	if len(r.Diagnostics) == 0 {
		return "rejected: " + r.Huh
	}
	return "rejected: " + r.Huh + ": " + strings.Join(r.Diagnostics, "; ")
}
