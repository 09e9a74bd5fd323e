package oob

import (
	"encoding/xml"
	"time"

	"github.com/xml-pipeline/xmlpipe/schemas"
)

// Version is the protocol version every root carries.
const Version = "1.1"

// NS is the protocol's namespace.
const NS = schemas.PrivilegedNS

// Request is a parsed <privileged-msg>. Exactly one operation field is set
// (the XSD's choice).
type Request struct {
	XMLName   xml.Name   `xml:"privileged-msg"`
	Version   string     `xml:"version,attr"`
	Payload   Operations `xml:"payload"`
	Signature *Signature `xml:"signature"`
}

// Signature is the owner's Ed25519 signature, base64, over the exclusive
// C14N of <payload>.
type Signature struct {
	Algorithm string `xml:"algorithm,attr"`
	Value     string `xml:",chardata"`
}

// Operations is the request <payload>: id and timestamp, and one operation.
type Operations struct {
	ID        string    `xml:"id,attr,omitempty"`
	Timestamp time.Time `xml:"timestamp,attr"`

	Shutdown                *Shutdown                `xml:"shutdown"`
	Halt                    *Halt                    `xml:"halt"`
	Resume                  *Resume                  `xml:"resume"`
	Reload                  *Reload                  `xml:"reload"`
	RegisterListener        *RegisterListener        `xml:"register-listener"`
	UnregisterListener      *NameArg                 `xml:"unregister-listener"`
	ListListeners           *ListListeners           `xml:"list-listeners"`
	GetListenerSchema       *GetListenerSchema       `xml:"get-listener-schema"`
	InjectMessage           *InjectMessage           `xml:"inject-message"`
	GetThreadHistory        *GetThreadHistory        `xml:"get-thread-history"`
	SubscribeThread         *SubscribeThread         `xml:"subscribe-thread"`
	Unsubscribe             *Unsubscribe             `xml:"unsubscribe"`
	KillThread              *KillThread              `xml:"kill-thread"`
	CancelThread            *KillThread              `xml:"cancel-thread"`
	ListApprovals           *ListApprovals           `xml:"list-approvals"`
	DecideApproval          *DecideApproval          `xml:"decide-approval"`
	GetOrganismGraph        *GetOrganismGraph        `xml:"get-organism-graph"`
	GetStatus               *GetStatus               `xml:"get-status"`
	SetConfig               *SetConfig               `xml:"set-config"`
	GetConfig               *GetConfig               `xml:"get-config"`
	RegisterRemoteGateway   *RegisterRemoteGateway   `xml:"register-remote-gateway"`
	UnregisterRemoteGateway *UnregisterRemoteGateway `xml:"unregister-remote-gateway"`
}

// Shutdown is <shutdown>.
type Shutdown struct {
	Mode           string `xml:"mode,omitempty"`
	Reason         string `xml:"reason,omitempty"`
	TimeoutSeconds int    `xml:"timeout-seconds,omitempty"`
}

// Reload is <reload>: organism.yaml read again and put in force in place.
type Reload struct {
	Reason string `xml:"reason,omitempty"`
}

// Halt is <halt>: the emergency stop of the agents (Scope agents, the
// default) or of every listener (all), or, with Listener, of that one
// listener alone.
type Halt struct {
	Scope    string `xml:"scope,omitempty"`
	Listener string `xml:"listener,omitempty"`
	Reason   string `xml:"reason,omitempty"`
}

// Resume is <resume>: the halt is lifted (with Listener, that listener's
// own halt only).
type Resume struct {
	Listener string `xml:"listener,omitempty"`
	Reason   string `xml:"reason,omitempty"`
}

// RegisterListener is <register-listener>.
type RegisterListener struct {
	Name          string    `xml:"name"`
	Class         string    `xml:"class"`
	Handler       string    `xml:"handler"`
	Description   string    `xml:"description,omitempty"`
	IsAgent       *bool     `xml:"is-agent"`
	Team          string    `xml:"team,omitempty"`
	MaxConcurrent int       `xml:"max-concurrent,omitempty"`
	Peers         *PeerList `xml:"peers"`
	Broadcast     *bool     `xml:"broadcast"`
}

// NameArg is an operation whose one argument is <name>.
type NameArg struct {
	Name string `xml:"name"`
}

// ListListeners is <list-listeners>.
type ListListeners struct {
	Detailed bool   `xml:"detailed,omitempty"`
	Team     string `xml:"team,omitempty"`
}

// GetListenerSchema is <get-listener-schema>.
type GetListenerSchema struct {
	Name   string `xml:"name"`
	Format string `xml:"format,omitempty"`
}

// InjectMessage is <inject-message>; Payload holds the payload element as
// written (it must declare its own namespace, xmlns="" for none).
type InjectMessage struct {
	To       string `xml:"to"`
	ThreadID string `xml:"thread-id,omitempty"`
	From     string `xml:"from,omitempty"`
	Payload  struct {
		Inner []byte `xml:",innerxml"`
	} `xml:"payload"`
}

// KillThread is <kill-thread>: the conversation ThreadID belongs to stops
// for good. <cancel-thread> has the same fields: the answer in flight of
// that conversation stops, and the conversation goes on.
type KillThread struct {
	ThreadID string `xml:"thread-id"`
	Reason   string `xml:"reason,omitempty"`
}

// GetThreadHistory is <get-thread-history>.
type GetThreadHistory struct {
	ThreadID        string `xml:"thread-id"`
	Limit           int    `xml:"limit,omitempty"`
	Offset          int    `xml:"offset,omitempty"`
	IncludePayloads bool   `xml:"include-payloads,omitempty"`
	// Conversation reads every thread of the conversation ThreadID belongs
	// to (each hop has a thread of its own), each message naming its thread.
	Conversation bool `xml:"conversation,omitempty"`
}

// SubscribeThread is <subscribe-thread>.
type SubscribeThread struct {
	ThreadID        string `xml:"thread-id,omitempty"`
	Listener        string `xml:"listener,omitempty"`
	IncludePayloads bool   `xml:"include-payloads,omitempty"`
}

// Unsubscribe is <unsubscribe>.
type Unsubscribe struct {
	SubscriptionID string `xml:"subscription-id"`
}

// GetOrganismGraph is <get-organism-graph>.
type GetOrganismGraph struct {
	Team          string `xml:"team,omitempty"`
	Format        string `xml:"format,omitempty"`
	IncludeRemote bool   `xml:"include-remote,omitempty"`
}

// GetStatus is <get-status>.
type GetStatus struct {
	IncludeListeners bool `xml:"include-listeners,omitempty"`
	IncludeThreads   bool `xml:"include-threads,omitempty"`
	IncludeMetrics   bool `xml:"include-metrics,omitempty"`
}

// SetConfig is <set-config>.
type SetConfig struct {
	Key   string `xml:"key"`
	Value string `xml:"value"`
}

// GetConfig is <get-config>.
type GetConfig struct {
	Key string `xml:"key,omitempty"`
}

// RegisterRemoteGateway is <register-remote-gateway>.
type RegisterRemoteGateway struct {
	URL           string   `xml:"url" json:"url"`
	Identity      string   `xml:"identity,omitempty" json:"identity,omitempty"`
	ImportTags    *TagList `xml:"import-tags" json:"import_tags,omitempty"`
	Description   string   `xml:"description,omitempty" json:"description,omitempty"`
	Team          string   `xml:"team,omitempty" json:"team,omitempty"`
	MaxConcurrent int      `xml:"max-concurrent,omitempty" json:"max_concurrent,omitempty"`
}

// TagList is <import-tags>.
type TagList struct {
	Tags []string `xml:"tag" json:"tags"`
}

// UnregisterRemoteGateway is <unregister-remote-gateway>.
type UnregisterRemoteGateway struct {
	URL string `xml:"url"`
}

// PeerList is <peers>.
type PeerList struct {
	Peers []string `xml:"peer"`
}

// Response is <privileged-response>.
type Response struct {
	XMLName   xml.Name        `xml:"https://xml-pipeline.org/privileged-msg privileged-response" json:"-"`
	Version   string          `xml:"version,attr" json:"version"`
	RequestID string          `xml:"request-id,attr,omitempty" json:"request_id,omitempty"`
	Timestamp time.Time       `xml:"timestamp,attr" json:"timestamp"`
	Payload   ResponsePayload `xml:"payload" json:"payload"`
}

// ResponsePayload holds one result (the XSD's choice).
type ResponsePayload struct {
	Ack            *Ack                `xml:"ack" json:"ack,omitempty"`
	Error          *ErrorResponse      `xml:"error" json:"error,omitempty"`
	Listeners      *ListenersResponse  `xml:"listeners" json:"listeners,omitempty"`
	ListenerSchema *ListenerSchema     `xml:"listener-schema" json:"listener_schema,omitempty"`
	ThreadCreated  *ThreadCreated      `xml:"thread-created" json:"thread_created,omitempty"`
	ThreadHistory  *ThreadHistory      `xml:"thread-history" json:"thread_history,omitempty"`
	Subscription   *SubscriptionResult `xml:"subscription" json:"subscription,omitempty"`
	OrganismGraph  *OrganismGraph      `xml:"organism-graph" json:"organism_graph,omitempty"`
	Status         *Status             `xml:"status" json:"status,omitempty"`
	Config         *ConfigResponse     `xml:"config" json:"config,omitempty"`
	Approvals      *ApprovalsResponse  `xml:"approvals" json:"approvals,omitempty"`
}

// Ack is <ack>.
type Ack struct {
	Success bool   `xml:"success,attr" json:"success"`
	Message string `xml:"message,omitempty" json:"message,omitempty"`
}

// ErrorResponse is <error>: Code is machine-readable (the Code* constants).
type ErrorResponse struct {
	Code    string `xml:"code" json:"code"`
	Message string `xml:"message" json:"message"`
	Details string `xml:"details,omitempty" json:"details,omitempty"`
}

// Error returns "code: message", and ": details" when the organism said
// why (the XSD violation, the reason a listener could not be registered):
// what `xmlpipe ctl` prints on stderr names the cause, not only its kind.
func (e *ErrorResponse) Error() string {
	if e.Details == "" {
		return e.Code + ": " + e.Message
	}
	return e.Code + ": " + e.Message + ": " + e.Details
}

// ListenersResponse is <listeners>.
type ListenersResponse struct {
	Count     int            `xml:"count,attr" json:"count"`
	Listeners []ListenerInfo `xml:"listener" json:"listeners"`
}

// ListenerInfo is one <listener>.
type ListenerInfo struct {
	Name            string    `xml:"name" json:"name"`
	Class           string    `xml:"class" json:"class"`
	Description     string    `xml:"description,omitempty" json:"description,omitempty"`
	IsAgent         bool      `xml:"is-agent" json:"is_agent"`
	Team            string    `xml:"team,omitempty" json:"team,omitempty"`
	RootTag         string    `xml:"root-tag" json:"root_tag"`
	Peers           *PeerList `xml:"peers" json:"peers,omitempty"`
	MessagesHandled *int64    `xml:"messages-handled" json:"messages_handled,omitempty"`
	ActiveThreads   *int      `xml:"active-threads" json:"active_threads,omitempty"`
}

// ListenerSchema is <listener-schema>.
type ListenerSchema struct {
	Format string `xml:"format,attr" json:"format"`
	Name   string `xml:"name" json:"name"`
	Schema string `xml:"schema" json:"schema"`
}

// ThreadCreated is <thread-created>.
type ThreadCreated struct {
	ThreadID string `xml:"thread-id" json:"thread_id"`
	RoutedTo string `xml:"routed-to" json:"routed_to"`
}

// ThreadHistory is <thread-history>.
type ThreadHistory struct {
	Total    int             `xml:"total,attr" json:"total"`
	Offset   int             `xml:"offset,attr" json:"offset"`
	ThreadID string          `xml:"thread-id" json:"thread_id"`
	Messages []ThreadMessage `xml:"message" json:"messages"`
}

// ThreadMessage is one journaled <message> of a thread.
type ThreadMessage struct {
	Seq int64 `xml:"seq,attr" json:"seq"`
	// Thread is the message's thread, given when the conversation was asked.
	Thread      string    `xml:"thread,attr,omitempty" json:"thread,omitempty"`
	From        string    `xml:"from" json:"from"`
	To          string    `xml:"to" json:"to"`
	Timestamp   time.Time `xml:"timestamp" json:"timestamp"`
	PayloadType string    `xml:"payload-type" json:"payload_type"`
	Payload     string    `xml:"payload,omitempty" json:"payload,omitempty"`
}

// SubscriptionResult is <subscription>.
type SubscriptionResult struct {
	SubscriptionID string `xml:"subscription-id" json:"subscription_id"`
}

// OrganismGraph is <organism-graph>.
type OrganismGraph struct {
	Format string `xml:"format,attr" json:"format"`
	Graph  string `xml:"graph" json:"graph"`
}

// Status is <status>.
type Status struct {
	Name              string             `xml:"name" json:"name"`
	UptimeSeconds     int64              `xml:"uptime-seconds" json:"uptime_seconds"`
	State             string             `xml:"state" json:"state"`
	ListenerCount     int                `xml:"listener-count" json:"listener_count"`
	ActiveThreads     int                `xml:"active-threads" json:"active_threads"`
	MessagesProcessed int64              `xml:"messages-processed" json:"messages_processed"`
	QueueDepth        int                `xml:"queue-depth" json:"queue_depth"`
	Listeners         *ListenersResponse `xml:"listeners" json:"listeners,omitempty"`
	Metrics           *Metrics           `xml:"metrics" json:"metrics,omitempty"`
	Gateways          *GatewaysStatus    `xml:"gateways" json:"gateways,omitempty"`
	// HaltedListeners names the listeners halted one by one (<halt>
	// <listener>) while the organism runs on, sorted; state stays
	// "running" for them, as REST /api/v1/organism's halted_listeners.
	HaltedListeners []string `xml:"halted-listener" json:"halted_listeners,omitempty"`
	// Store is the durable store's health (nil for an organism without
	// one).
	Store *StoreStatus `xml:"store" json:"store,omitempty"`
}

// StoreStatus is <store> of <status>: whether the store's commits succeed
// (state "ok"), or since when and why they fail ("failing": a full disk,
// an I/O error), while the organism refuses what it cannot journal.
type StoreStatus struct {
	State string `xml:"state" json:"state"`
	// Error is the failure, as SQLite reported it (failing only).
	Error string `xml:"error,omitempty" json:"error,omitempty"`
	// Since is when the commits began to fail, RFC 3339 UTC (failing only).
	Since string `xml:"since,omitempty" json:"since,omitempty"`
	// HeldWrites counts the writes (kernel state, delivery marks) held
	// for the storage to recover.
	HeldWrites int `xml:"held-writes,omitempty" json:"held_writes,omitempty"`
}

// GatewaysStatus is <gateways> of <status>: the organism's federation.
type GatewaysStatus struct {
	Count    int            `xml:"count,attr" json:"count"`
	Gateways []GatewayState `xml:"gateway" json:"gateways"`
}

// GatewayState is one <gateway> of <gateways>: its link to the peer.
type GatewayState struct {
	Name string `xml:"name" json:"name"`
	// PeerAddress is the URL the gateway dials, or the address of the
	// peer's inbound link; empty when neither is known.
	PeerAddress string `xml:"peer-address,omitempty" json:"peer_address,omitempty"`
	// Peer is the peer organism's name while the link is up.
	Peer string `xml:"peer,omitempty" json:"peer,omitempty"`
	// State is up, down or connecting; Since is when the link last came
	// up or went down (RFC 3339).
	State string `xml:"state" json:"state"`
	Since string `xml:"since,omitempty" json:"since,omitempty"`
	// LastError says why the link is down.
	LastError    string `xml:"last-error,omitempty" json:"last_error,omitempty"`
	EnvelopesIn  int64  `xml:"envelopes-in" json:"envelopes_in"`
	EnvelopesOut int64  `xml:"envelopes-out" json:"envelopes_out"`
	// Waiting counts the callers waiting on the peer's answer; Queued the
	// envelopes waiting for the peer's acknowledgement.
	Waiting int `xml:"waiting" json:"waiting"`
	Queued  int `xml:"queued" json:"queued"`
}

// Metrics is <metrics>.
type Metrics struct {
	Metrics []Metric `xml:"metric" json:"metrics"`
}

// Metric is one <metric>.
type Metric struct {
	Name  string `xml:"name,attr" json:"name"`
	Type  string `xml:"type,attr,omitempty" json:"type,omitempty"`
	Value string `xml:",chardata" json:"value"`
}

// ConfigResponse is <config>.
type ConfigResponse struct {
	Entries []ConfigEntry `xml:"entry" json:"entries"`
}

// ConfigEntry is one <entry>.
type ConfigEntry struct {
	Mutable     bool   `xml:"mutable,attr" json:"mutable"`
	Key         string `xml:"key" json:"key"`
	Value       string `xml:"value" json:"value"`
	Description string `xml:"description,omitempty" json:"description,omitempty"`
}

// Push is <privileged-push>.
type Push struct {
	XMLName   xml.Name    `xml:"https://xml-pipeline.org/privileged-msg privileged-push" json:"-"`
	Version   string      `xml:"version,attr" json:"version"`
	Timestamp time.Time   `xml:"timestamp,attr" json:"timestamp"`
	Payload   PushPayload `xml:"payload" json:"payload"`
}

// PushPayload holds one event.
type PushPayload struct {
	SubscriptionID string         `xml:"subscription-id,attr,omitempty" json:"subscription_id,omitempty"`
	ThreadEvent    *ThreadEvent   `xml:"thread-event" json:"thread_event,omitempty"`
	ListenerEvent  *ListenerEvent `xml:"listener-event" json:"listener_event,omitempty"`
	SystemEvent    *SystemEvent   `xml:"system-event" json:"system_event,omitempty"`
}

// ThreadEvent is <thread-event>.
type ThreadEvent struct {
	ThreadID     string `xml:"thread-id" json:"thread_id"`
	EventType    string `xml:"event-type" json:"event_type"`
	From         string `xml:"from,omitempty" json:"from,omitempty"`
	To           string `xml:"to,omitempty" json:"to,omitempty"`
	PayloadType  string `xml:"payload-type,omitempty" json:"payload_type,omitempty"`
	Payload      string `xml:"payload,omitempty" json:"payload,omitempty"`
	ErrorMessage string `xml:"error-message,omitempty" json:"error_message,omitempty"`
}

// ListenerEvent is <listener-event>.
type ListenerEvent struct {
	EventType string `xml:"event-type" json:"event_type"`
	Name      string `xml:"name" json:"name"`
	Details   string `xml:"details,omitempty" json:"details,omitempty"`
}

// SystemEvent is <system-event>.
type SystemEvent struct {
	EventType string `xml:"event-type" json:"event_type"`
	Message   string `xml:"message,omitempty" json:"message,omitempty"`
	Details   string `xml:"details,omitempty" json:"details,omitempty"`
}

// Error codes of <error>.
const (
	CodeMalformed        = "MALFORMED_REQUEST"
	CodeUnsigned         = "UNSIGNED"
	CodeInvalidSignature = "INVALID_SIGNATURE"
	CodeStale            = "STALE_REQUEST"
	CodeReplayed         = "REPLAYED"
	CodeBusy             = "BUSY"
	CodeNotFound         = "NOT_FOUND"
	CodeInvalidArgument  = "INVALID_ARGUMENT"
	CodeNotSupported     = "NOT_SUPPORTED"
	CodeImmutable        = "IMMUTABLE"
	CodeInternal         = "INTERNAL"
	CodeShuttingDown     = "SHUTTING_DOWN"
	// CodeReloadRefused: reload found the organism file broken, or a change
	// it cannot apply while running; the running configuration stays.
	CodeReloadRefused = "RELOAD_REFUSED"
	// CodeEnded: kill-thread named a conversation that has ended
	// (completed, failed or killed: nothing of it runs; it is left as it
	// was).
	CodeEnded = "ALREADY_ENDED"
	// CodeDecided: decide-approval named an approval that is not pending
	// (approved, denied or expired already); the message says how it
	// ended.
	CodeDecided = "ALREADY_DECIDED"
)
