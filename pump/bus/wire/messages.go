package wire

// The message log stream, GET /api/v1/ws/messages: after a subscribe command
// the server sends every message the organism accepts that matches the
// filter, one LogMessage per text frame; replies to commands are LogEvents.

// Commands and events of the message log stream.
const (
	// CmdSubscribe sets (or replaces) the stream's filter.
	CmdSubscribe = "subscribe"
	// LogSubscribed answers CmdSubscribe with the filter now in force.
	LogSubscribed = "subscribed"
	// LogError answers a command the server did not understand.
	LogError = "error"
)

// LogCommand is a client frame of the message log stream:
// {"cmd":"subscribe","filter":{"agents":[],"threads":[],"payload_types":[]}}.
type LogCommand struct {
	Cmd    string    `json:"cmd"`
	Filter LogFilter `json:"filter"`
}

// LogFilter selects the messages of the log stream. A message matches when
// every non-empty list matches it: Agents names its sender, addressee or
// receiving listener, Threads its thread or conversation, PayloadTypes its
// payload root tag.
type LogFilter struct {
	Agents       []string `json:"agents"`
	Threads      []string `json:"threads"`
	PayloadTypes []string `json:"payload_types"`
}

// LogMessage is one accepted message. ID is the SHA-256 (hex) of the
// canonical envelope, the message id of the REST API; Payload is the
// canonical payload XML; SlotIndex is the message's index in its thread's
// history (the context buffer the receiving handler sees), null for a reply
// leaving the organism, which enters no listener's history.
type LogMessage struct {
	ID           string `json:"id"`
	ThreadID     string `json:"thread_id"`
	Conversation string `json:"conversation"`
	From         string `json:"from"`
	To           string `json:"to"`
	Listener     string `json:"listener,omitempty"`
	PayloadType  string `json:"payload_type"`
	Payload      string `json:"payload"`
	Timestamp    string `json:"timestamp"`
	SlotIndex    *int   `json:"slot_index"`
	// Withheld, when set, says why Payload is empty: "memory" for what an
	// agent asked to remember (or the memory listener's answer), which
	// only its conversation's owner and admins read.
	Withheld string `json:"withheld,omitempty"`
}

// LogEvent answers a command: LogSubscribed with the filter in force, or
// LogError with what was wrong.
type LogEvent struct {
	Event  string     `json:"event"`
	Filter *LogFilter `json:"filter,omitempty"`
	Error  string     `json:"error,omitempty"`
}
