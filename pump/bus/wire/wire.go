// Package wire holds the JSON frames of the main bus's /ws protocol and of
// its message log stream (/api/v1/ws/messages), shared by the server
// (package bus) and its Go clients (the remote console in package console),
// so both ends always agree on the field names. The protocols themselves are
// described in package bus's documentation.
package wire

import "encoding/json"

// Frame types: the "type" field of every frame.
const (
	// Client → server.
	TypePing      = "ping"
	TypeStatus    = "status"
	TypeListeners = "listeners"
	TypeTargets   = "targets"
	TypeSend      = "send"
	TypeThreads   = "threads"
	TypeMonitor   = "monitor"
	TypeUsage     = "usage"
	// TypeSubscribe chooses the event frames the socket gets (Request.Events).
	TypeSubscribe = "subscribe"

	// Server → client: replies.
	TypeConnected = "connected"
	TypePong      = "pong"
	TypeSent      = "sent"
	TypeError     = "error"
	// TypeSubscribed answers TypeSubscribe (Subscribed).
	TypeSubscribed = "subscribed"

	// Server → client: events of the socket's conversations.
	TypeMessage     = "message"
	TypeOutput      = "output"
	TypeReply       = "reply"
	TypeHuh         = "huh"
	TypeSystemError = "system_error"
	TypeDeadLetter  = "dead_letter"
	TypeComplete    = "complete"
	// TypeDelta is a piece of the text an agent's model is writing (not
	// journaled; the agent's answer follows as a message).
	TypeDelta = "delta"
)

// Error codes of TypeError frames: what kind of failure the text describes.
const (
	// CodeBadRequest: the frame was not understood (bad JSON, unknown type,
	// missing field).
	CodeBadRequest = "bad_request"
	// CodeForbidden: the user's role does not allow the command.
	CodeForbidden = "forbidden"
	// CodeUnknownTarget: no listener has the target name.
	CodeUnknownTarget = "unknown_target"
	// CodeNoTextField: the target's payload has no field for the text.
	CodeNoTextField = "no_text_field"
	// CodeBadPayload: a structured payload does not fit the target's
	// payload type; Error says where.
	CodeBadPayload = "bad_payload"
	// CodeRejected: the organism refused the message at ingress; Error is the
	// canned <huh> text and Diagnostics the details.
	CodeRejected = "rejected"
	// CodeKilled: the thread_id names a conversation that was killed; a
	// kill ends a conversation for good: send without a thread_id to begin
	// a new one.
	CodeKilled = "killed"
	// CodeUnavailable: the organism is shutting down, or cannot journal
	// messages now (its storage fails: a full disk); then nothing of the
	// message was kept: send it again after RetryAfter seconds.
	CodeUnavailable = "unavailable"
	// CodeBusy: the organism was too busy to take the message (its
	// in-flight budget, the target listener's share or the user's is full);
	// nothing of it was kept: send it again after RetryAfter seconds.
	CodeBusy = "busy"
	// CodeInternal: anything else.
	CodeInternal = "internal"
)

// Head is the part every frame has: its type and, for a reply, the id of the
// request it answers (echoed verbatim when the request carried one).
type Head struct {
	Type string          `json:"type"`
	ID   json.RawMessage `json:"id,omitempty"`
}

// Request is any client frame. Send takes Raw ("@greeter Dan") or Target
// with Content (or Text, or Message, as the reference accepts), or Target
// with Payload: a JSON object of the payload's fields (native arrays and
// objects) or a JSON string of its XML, as POST /api/v1/inject takes it;
// with ThreadID it continues that conversation of the user's (or begins one
// under a new id). Monitor takes Prefix (a thread-id prefix, or "*").
// Subscribe takes Events: the frame types of the events the socket wants
// (empty: all of them, the default).
type Request struct {
	Head
	Raw      string          `json:"raw,omitempty"`
	Target   string          `json:"target,omitempty"`
	Content  string          `json:"content,omitempty"`
	Text     string          `json:"text,omitempty"`
	Message  string          `json:"message,omitempty"`
	Payload  json.RawMessage `json:"payload,omitempty"`
	ThreadID string          `json:"thread_id,omitempty"`
	Prefix   string          `json:"prefix,omitempty"`
	Events   []string        `json:"events,omitempty"`
}

// Body returns the text of a target+content send: the first non-empty of
// Content, Text and Message.
func (r Request) Body() string {
	for _, s := range []string{r.Content, r.Text, r.Message} {
		if s != "" {
			return s
		}
	}
	return ""
}

// Connected is the first frame on a socket.
type Connected struct {
	Head
	Username string `json:"username"`
	Role     string `json:"role"`
}

// Subscribed answers TypeSubscribe: the event types the socket gets from
// now on, sorted.
type Subscribed struct {
	Head
	Events []string `json:"events"`
}

// Status answers TypeStatus. Threads is the reference's field (live
// threads: those of running conversations); IdleThreads are kept after
// their conversation completed; the others describe the organism.
type Status struct {
	Head
	Threads       int     `json:"threads"`
	IdleThreads   int     `json:"idle_threads"`
	Organism      string  `json:"organism"`
	UptimeSeconds float64 `json:"uptime_seconds"`
	Listeners     int     `json:"listeners"`
	Slots         int     `json:"slots"`
	Processed     int64   `json:"processed"`
	Failed        int64   `json:"failed"`
	InFlight      int     `json:"in_flight"`
	// Gateways describes each federation gateway on one line (omitted
	// without gateways).
	Gateways []string `json:"gateways,omitempty"`
	// Halted is the scope of the emergency halt in force ("agents" or
	// "all"; omitted while the organism runs).
	Halted string `json:"halted,omitempty"`
	// HaltedListeners are the listeners halted one by one (omitted: none).
	HaltedListeners []string `json:"halted_listeners,omitempty"`
	// Profile, set for a user with a security profile, is the profile
	// the answer is scoped to: threads, idle_threads and listeners count
	// only what it sees; slots, processed, failed, in_flight and gateways
	// are organism-wide and not shown (0, omitted).
	Profile string `json:"profile,omitempty"`
}

// Listeners answers TypeListeners and TypeTargets: Listeners is the
// reference's list of names, Details describes each.
type Listeners struct {
	Head
	Listeners []string   `json:"listeners"`
	Details   []Listener `json:"details"`
}

// Listener describes one listener.
type Listener struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Agent       bool   `json:"agent"`
	Broadcast   bool   `json:"broadcast"`
	RootTag     string `json:"root_tag"`
}

// Sent answers a successful TypeSend: the conversation's thread id and the
// listener it went to (always set, unlike the reference).
type Sent struct {
	Head
	ThreadID string `json:"thread_id"`
	Target   string `json:"target"`
}

// Error answers a request that failed.
type Error struct {
	Head
	Error       string   `json:"error"`
	Code        string   `json:"code,omitempty"`
	Diagnostics []string `json:"diagnostics,omitempty"`
	// RetryAfter is when to send again, in seconds (CodeBusy, and
	// CodeUnavailable while the storage fails).
	RetryAfter int `json:"retry_after,omitempty"`
}

// Threads answers TypeThreads: for a durable organism the journal's recent
// ended conversations (Ended), then the live threads, each oldest first.
type Threads struct {
	Head
	Threads []Thread `json:"threads"`
}

// Thread is one live thread, or (Ended) a conversation of a durable
// organism known only from its journal — possibly from before a restart.
type Thread struct {
	ID string `json:"id"`
	// Ended marks a conversation that is no longer live; Slots is then its
	// journaled message count and Depth 0.
	Ended       bool    `json:"ended,omitempty"`
	Depth       int     `json:"depth"`
	Slots       int     `json:"slots"`
	IdleSeconds float64 `json:"idle_seconds"`
	LastFrom    string  `json:"last_from,omitempty"`
	LastTo      string  `json:"last_to,omitempty"`
}

// Monitor answers TypeMonitor: the history of the matching threads.
type Monitor struct {
	Head
	Prefix  string    `json:"prefix"`
	Threads []History `json:"threads"`
}

// History is one thread's message history, oldest first.
type History struct {
	ID    string `json:"id"`
	Slots []Slot `json:"slots"`
}

// Slot is one message of a thread's history.
type Slot struct {
	From        string `json:"from"`
	To          string `json:"to"`
	PayloadType string `json:"payload_type"`
	// Payload is the payload's canonical XML (absent when unknown).
	Payload   string `json:"payload,omitempty"`
	Timestamp string `json:"timestamp"`
}

// Message is TypeMessage: an envelope of the conversation was accepted and
// delivered to Listener. ThreadID is the conversation id (what TypeSent
// returned); Payload is the canonical payload XML.
type Message struct {
	Head
	ThreadID    string `json:"thread_id"`
	From        string `json:"from"`
	To          string `json:"to"`
	Listener    string `json:"listener"`
	PayloadType string `json:"payload_type"`
	Payload     string `json:"payload"`
	Timestamp   string `json:"timestamp"`
	// MessageID is the frame's stable id (see MessageID).
	MessageID string `json:"message_id"`
}

// Output is TypeOutput: a line a listener printed on the conversation
// (response-handler's "HELLO, DAN!"), or an agent's interim text (what its
// model wrote beside its tool calls, or a turn its loop control
// continued).
type Output struct {
	Head
	ThreadID string `json:"thread_id"`
	From     string `json:"from"`
	Text     string `json:"text"`
	// MessageID is the frame's stable id (see MessageID).
	MessageID string `json:"message_id"`
	// Streamed says the socket's delta frames of this agent already
	// carried Text, whole (see Reply.Streamed); absent otherwise.
	Streamed bool `json:"streamed,omitempty"`
}

// Reply is TypeReply: a message addressed back to the sender outside the
// organism. Text is the payload's text field when that is all the payload
// holds (organism.PayloadText); otherwise Payload is the answer.
type Reply struct {
	Head
	ThreadID    string `json:"thread_id"`
	From        string `json:"from"`
	To          string `json:"to"`
	PayloadType string `json:"payload_type"`
	Payload     string `json:"payload"`
	Text        string `json:"text,omitempty"`
	Timestamp   string `json:"timestamp"`
	// MessageID is the frame's stable id (see MessageID).
	MessageID string `json:"message_id"`
	// Streamed says the socket's delta frames of this agent (From) in the
	// conversation already carried Text, whole — the frames of its latest
	// stream, the one ended last: a client that rendered them shows the
	// reply's text no more. Absent when they did not (no deltas: a socket
	// not subscribed to them, a listener that streams nothing; or text
	// that differs from what streamed), and the client shows Text.
	Streamed bool `json:"streamed,omitempty"`
}

// Failure is TypeHuh, TypeSystemError or TypeDeadLetter: a message of the
// conversation failed. Error is the canned text (a <huh>), the SystemError
// message, or the dead-letter reason.
type Failure struct {
	Head
	ThreadID    string   `json:"thread_id"`
	From        string   `json:"from,omitempty"`
	To          string   `json:"to,omitempty"`
	Error       string   `json:"error"`
	Diagnostics []string `json:"diagnostics,omitempty"`
	// Told, on a huh frame addressed to a user's session identity, is what
	// the handler that failed wrote for the message's sender (the text of
	// its *xmlpipe.InputError: a field left empty, a peer organism that
	// could not be reached): a console prints it after Error, as the
	// in-process console does. Absent for any other failure.
	Told      string `json:"told,omitempty"`
	Timestamp string `json:"timestamp"`
	// MessageID is the frame's stable id (see MessageID).
	MessageID string `json:"message_id"`
}

// Complete is TypeComplete: the conversation has nothing in flight any more.
type Complete struct {
	Head
	ThreadID string `json:"thread_id"`
	// Error says why the conversation ended early ("conversation killed"),
	// absent when it ran its course.
	Error     string `json:"error,omitempty"`
	Timestamp string `json:"timestamp"`
	// MessageID is the frame's stable id (see MessageID).
	MessageID string `json:"message_id"`
}

// Delta is TypeDelta: text an agent's model wrote on the conversation,
// streamed as it arrives (consecutive pieces of one stream may come joined
// in one frame). End marks the last frame of the model's reply; it may
// carry text. Deltas are not journaled, carry no message_id and are not
// sent again after a crash: the agent's answer, a message, is what counts.
type Delta struct {
	Head
	ThreadID string `json:"thread_id"`
	Agent    string `json:"agent"`
	Text     string `json:"text"`
	End      bool   `json:"end,omitempty"`
}

// Usage answers TypeUsage: the organism's LLM tokens per agent and per
// backend (LLM is false when it has no usable backend; the lists are then
// empty) and its newest calls, oldest first.
type Usage struct {
	Head
	LLM      bool         `json:"llm"`
	Agents   []TokenUsage `json:"agents"`
	Backends []TokenUsage `json:"backends"`
	Calls    []Call       `json:"calls"`
}

// TokenUsage is the tokens and requests of one agent or backend.
type TokenUsage struct {
	Name             string `json:"name"`
	PromptTokens     int    `json:"prompt_tokens"`
	CompletionTokens int    `json:"completion_tokens"`
	Requests         int    `json:"requests"`
}

// Call is one LLM call — one attempt of an agent's model call at one
// backend — in TypeUsage and GET /api/v1/usage/calls. Durations are in
// milliseconds; first_token_ms is 0 when no text was streamed; outcome is
// "completed", "aborted" (its caller stopped it: a halt, cancel, kill,
// reload; finish_reason "aborted") or "failed"; error is set for a failed
// or aborted call, whose tokens are the estimate of what it spent when the
// model had begun to stream (else 0); usage_estimated is true when the
// tokens are such an estimate or the backend reported no usage (4 bytes a
// token; absent when they are the backend's count); envelope_seq is the
// journal seq of the envelope the call produced (absent while not known).
type Call struct {
	ID               int64   `json:"id"`
	Time             string  `json:"time"`
	Conversation     string  `json:"conversation"`
	Thread           string  `json:"thread"`
	Agent            string  `json:"agent"`
	Backend          string  `json:"backend"`
	Model            string  `json:"model"`
	Attempt          int     `json:"attempt"`
	PromptTokens     int     `json:"prompt_tokens"`
	CompletionTokens int     `json:"completion_tokens"`
	UsageEstimated   bool    `json:"usage_estimated,omitempty"`
	WaitMS           float64 `json:"wait_ms"`
	FirstTokenMS     float64 `json:"first_token_ms"`
	DurationMS       float64 `json:"duration_ms"`
	Streamed         bool    `json:"streamed"`
	FinishReason     string  `json:"finish_reason,omitempty"`
	Outcome          string  `json:"outcome"`
	ToolCalls        int     `json:"tool_calls"`
	Error            string  `json:"error,omitempty"`
	EnvelopeSeq      int64   `json:"envelope_seq,omitempty"`
}
