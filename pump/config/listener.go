package config

import "net/url"

// Listener is one listeners[] entry: a capability of the organism.
type Listener struct {
	// Name is the registered name: the <to>/<from> value and a thread
	// chain segment. Unique, case-insensitively. Required.
	Name string `yaml:"name"`
	// PayloadClass names the payload type in the compiled-in catalog (the
	// Python dotted names of the built-ins are accepted). Required.
	PayloadClass string `yaml:"payload_class"`
	// Handler names the handler in the compiled-in catalog. Required.
	Handler string `yaml:"handler"`
	// Description leads the generated tool prompt. Required.
	Description string `yaml:"description"`
	// Agent marks an LLM agent: unique root tag, own name in metadata,
	// peers enforced, per-agent concurrency limit.
	Agent bool `yaml:"agent"`
	// Peers lists the listener and gateway names this listener may address.
	Peers []string `yaml:"peers"`
	// Broadcast lets several listeners share one root tag (never agents).
	Broadcast bool `yaml:"broadcast"`
	// Prompt is the agent's system prompt.
	Prompt string `yaml:"prompt"`
	// Model is the LLM model the agent asks for ("" = the router's choice).
	Model string `yaml:"model"`
	// MaxTokens caps each completion of the agent (0 = the provider's
	// default).
	MaxTokens int `yaml:"max_tokens"`
	// Temperature is the agent's sampling temperature (unset = the
	// provider's default).
	Temperature Temperature `yaml:"temperature"`
	// MaxIterations bounds the agent's turns on one thread (0 = 25).
	MaxIterations int `yaml:"max_iterations"`
	// ToolCalling is how the agent's model reaches its peers and tools:
	// native (functions through the provider's tool calling, the default)
	// or xml (peer payloads written as XML in the text, for models without
	// function calling). Unset: its backend's tool_calling, else native.
	ToolCalling ToolCalling `yaml:"tool_calling"`
	// ContextWindow is the agent's model's context window in tokens: the
	// history sent beyond it is trimmed, oldest first, with a note to the
	// model (0 = its backend's context_window, else a table of well-known
	// models, else 32768).
	ContextWindow int `yaml:"context_window"`
	// Librarian, on an agent, curates its context before every model call:
	// folds irrelevant segments into summaries, folds then evicts what does
	// not fit the context window, and offers the model context_unfold (see
	// Librarian). Unset: the history is fitted to the window, oldest
	// first.
	Librarian *Librarian `yaml:"librarian"`
	// Route, on an agent, offers its model the route tool (seed 000 §10):
	// it describes what it needs in words and gets the listeners it may
	// address that do it, ranked, the best one called with a payload filled
	// from the description (routing: configures the embeddings and the
	// fill models).
	Route bool `yaml:"route"`
	// MaxMessagesPerTurn caps the messages one reply of the listener (an
	// agent's model reply, any Raw output) may send: a reply holding more
	// sends none of them and the listener gets a SystemError saying the
	// limit (0 = 32).
	MaxMessagesPerTurn int `yaml:"max_messages_per_turn"`
	// Tools lists the native tools the agent may use.
	Tools []string `yaml:"tools"`
	// ToolConfig restricts each tool, keyed by tool name.
	ToolConfig map[string]ToolConfig `yaml:"tool_config"`
	// Type is the implementation kind: go (default), wasm, or lua (accepted
	// by the loader, rejected by Validate).
	Type ListenerType `yaml:"type"`
	// Module is the WebAssembly module path of a wasm listener.
	Module string `yaml:"module"`
	// Script is an alternative spelling of Module (the Lua proposal's key).
	Script string `yaml:"script"`
	// XSD is a schema file path overriding the generated payload schema.
	XSD string `yaml:"xsd"`
	// Payload is a wasm listener's payload contract as a field list (or
	// give xsd).
	Payload FieldList `yaml:"payload"`
	// Response is the contract of what a wasm listener answers (its output
	// is then returned to the caller; without it the output is routed by
	// its root tag), or of what a YAML agent answers: the model is asked for
	// that payload as structured output.
	Response FieldList `yaml:"response"`
	// Capabilities bound a wasm listener's sandbox.
	Capabilities Capabilities `yaml:"capabilities"`
	// Server is the external server of an mcp listener.
	Server MCPServer `yaml:"server"`
	// Config is free-form configuration handed to the listener.
	Config map[string]any `yaml:"config"`
	// Group names the broadcast group the listener belongs to.
	Group string `yaml:"group"`
	// NotifyOnPrune asks for a notification when one of the listener's
	// threads is pruned.
	NotifyOnPrune bool `yaml:"notify_on_prune"`
	// MaxConcurrent bounds this listener's handlers running at once; 0
	// means the organism default (max_concurrent_per_agent for agents).
	MaxConcurrent int `yaml:"max_concurrent"`
	// Timeout bounds one handler call (a number of seconds or a Go
	// duration: 90, "2m"). When it fires, the call is cancelled, its answer
	// discarded and the sender gets a <huh>; a handler that ignores the
	// cancellation is abandoned 5 s later and its worker replaced. 0 or
	// unset: the default — 60 s for tools and other listeners, 5 min for
	// agents, in either case raised to what the listener is configured to
	// take (the longest tool_config timeout of a tool, an mcp server's
	// timeout, a wasm capabilities.timeout, the longest llm backend timeout
	// of an agent) plus 10 s. Negative is refused; there is no "none".
	Timeout Duration `yaml:"timeout"`
	// Retention overrides journal.retention for this listener's messages;
	// the zero value means "as the journal".
	Retention Retention `yaml:"retention"`
	// Approval names the tools and peers whose calls from this listener
	// wait for a human to approve them (GET /api/v1/approvals, the
	// console's /approve and /deny, the dashboard): approved, the call is
	// delivered; denied or timed out, the listener gets a <refusal>.
	Approval []string `yaml:"approval"`
	// ApprovalTimeout is how long such a call waits (default 1h): then it
	// is refused with "approval timed out".
	ApprovalTimeout Duration `yaml:"approval_timeout"`
	// Profile names the profile the threads this listener opens run under
	// (an agent's: the threads it spawns), intersected with the thread it
	// works on: its sends reach only what both allow. "" adds nothing.
	Profile string `yaml:"profile"`
	// Callable offers the listener to federated peers as one tool
	// (profile.go).
	Callable Callable `yaml:"callable"`
	// Memory gives an agent the remember and recall tools: true (under the
	// organism's memory.consent) or {consent: ask|always|never}.
	Memory AgentMemory `yaml:"memory"`
	// LoopControl is aeiou for AEIOU v3 loop control: the agent decides
	// continue, done or abort with a host-signed token (default: none, its
	// answer ends the turn).
	LoopControl LoopControl `yaml:"loop_control"`
}

// ToolConfig restricts one native tool of a listener. Keys a tool does not
// use are ignored by it; every limit has a safe default (see
// listeners/tools), and an empty allow-list allows nothing.
type ToolConfig struct {
	// AllowedDomains limits the hosts a network tool may reach (fetch:
	// empty = any public host).
	AllowedDomains []string `yaml:"allowed_domains"`
	// AllowedPaths are the roots a file tool may touch (empty = none):
	// existing directories, named by callers by their base names, clear of
	// the data directory (checked when the organism is built).
	AllowedPaths []string `yaml:"allowed_paths"`
	// AllowedRecipients limits who a messaging tool may write to.
	AllowedRecipients []string `yaml:"allowed_recipients"`
	// AllowedCommands are the programs run_command may start and the
	// arguments each accepts (empty = none; see AllowedCommand).
	AllowedCommands []AllowedCommand `yaml:"allowed_commands"`
	// RunAs is the user run_command's programs run as when the organism
	// runs as root: a user name, UID or UID:GID (default nobody; never
	// root); "self" keeps the organism's user when it is not root.
	RunAs string `yaml:"run_as"`
	// Env lists the environment variables passed to a command (default
	// none; PATH is fixed).
	Env []string `yaml:"env"`
	// SharedNamespaces are key_value namespaces every user shares; any
	// other named namespace is private to the calling user.
	SharedNamespaces []string `yaml:"shared_namespaces"`
	// ReadOnly forbids writes and deletes (files).
	ReadOnly bool `yaml:"read_only"`
	// Timeout bounds one call (run_command, fetch, web_search, librarian).
	Timeout Duration `yaml:"timeout"`
	// MaxBytes caps what a call reads or returns (file size, command
	// output, response body).
	MaxBytes int `yaml:"max_bytes"`
	// MaxDiskBytes caps what each root of a writable files tool holds, in
	// bytes: its files' sizes and its links' targets in whole 4 KiB blocks
	// and a block a name, counted as a WASM guest's dir is, so it bounds the
	// disk the root takes (default 1 GiB).
	MaxDiskBytes int `yaml:"max_disk_bytes"`
	// MaxKeys caps the live keys of one key_value namespace (default
	// 10000); MaxTotalBytes caps the bytes of their keys and values
	// together (default 16 MiB). Overwriting a key within them is allowed.
	MaxKeys       int `yaml:"max_keys"`
	MaxTotalBytes int `yaml:"max_total_bytes"`
	// ConversationTTL is how long key_value keeps a conversation's
	// namespace (the one a call without <Namespace> uses) after its last
	// set or delete: then it is deleted, keys and all (default 720h = 30
	// days). Named namespaces are kept.
	ConversationTTL Duration `yaml:"conversation_ttl"`
	// MaxRedirects caps the redirects fetch follows.
	MaxRedirects int `yaml:"max_redirects"`
	// MaxExpressionLength, MaxExponent and MaxResultDigits bound calculate.
	MaxExpressionLength int `yaml:"max_expression_length"`
	MaxExponent         int `yaml:"max_exponent"`
	MaxResultDigits     int `yaml:"max_result_digits"`
	// Provider, APIKeyEnv and EngineID configure web_search (serpapi,
	// google, bing); unset = the tool refuses cleanly.
	Provider  string `yaml:"provider"`
	APIKeyEnv string `yaml:"api_key_env"`
	EngineID  string `yaml:"engine_id"`
	// URL, Username and PasswordEnv point librarian at an eXist-db REST
	// endpoint (unset: the embedded SQLite store).
	URL         string `yaml:"url"`
	Username    string `yaml:"username"`
	PasswordEnv string `yaml:"password_env"`
}

// ListenerType is a listener's implementation kind.
type ListenerType string

// The listener kinds.
const (
	// GoListener is a compiled-in Go listener (written as "" or "go").
	GoListener ListenerType = "go"
	// WasmListener runs a WebAssembly module.
	WasmListener ListenerType = "wasm"
	// MCPListener mounts an external MCP server's tools as listeners.
	MCPListener ListenerType = "mcp"
	// LuaListener is the reference's Lua proposal; not supported.
	LuaListener ListenerType = "lua"
)

// YAMLAgent reports whether the listener is an LLM agent declared in
// organism.yaml alone: agent: true with neither payload_class nor handler.
// Its payload is a text payload unique to the agent and its handler the
// agent loop.
func (l Listener) YAMLAgent() bool {
	return l.Agent && l.PayloadClass == "" && l.Handler == ""
}

// ModulePath returns the module path of a wasm listener (module, else script).
func (l Listener) ModulePath() string {
	if l.Module != "" {
		return l.Module
	}
	return l.Script
}

// SearchProviders are the web_search providers.
var SearchProviders = []string{"serpapi", "google", "bing"}

// ToolAnswerCap is the most a tool's max_bytes may be: the default
// message size cap, which bounds a tool's answers whatever
// organism.max_message_bytes says.
const ToolAnswerCap = 1 << 20

// checkToolConfig reports out-of-range limits and unknown providers.
// messageCap is organism.max_message_bytes: max_bytes above it, or above
// ToolAnswerCap, is an error, not a warning, because no call could use it —
// what a tool reads, runs or fetches comes back in one message, and what it
// writes came in one — while an append could grow a file to a size the
// tool can never read back.
func checkToolConfig(r *reporter, path string, tc ToolConfig, messageCap int) {
	r.nonNegative(path+".max_bytes", tc.MaxBytes)
	limit := ToolAnswerCap
	if messageCap > 0 {
		limit = min(limit, messageCap)
	}
	if tc.MaxBytes > limit {
		r.add(path+".max_bytes", "%d is over the %d-byte message cap: nothing larger reaches the tool or comes back "+
			"from it (want at most %d; 0 or unset: the tool's default)", tc.MaxBytes, limit, limit)
	}
	r.nonNegative(path+".max_disk_bytes", tc.MaxDiskBytes)
	r.nonNegative(path+".max_keys", tc.MaxKeys)
	r.nonNegative(path+".max_total_bytes", tc.MaxTotalBytes)
	r.nonNegative(path+".max_redirects", tc.MaxRedirects)
	r.nonNegative(path+".max_expression_length", tc.MaxExpressionLength)
	r.nonNegative(path+".max_exponent", tc.MaxExponent)
	r.nonNegative(path+".max_result_digits", tc.MaxResultDigits)
	if tc.Timeout < 0 {
		r.add(path+".timeout", "must not be negative, got %s", tc.Timeout)
	}
	if tc.ConversationTTL < 0 {
		r.add(path+".conversation_ttl", "must not be negative, got %s", tc.ConversationTTL)
	}
	if tc.Provider != "" && !containsFold(SearchProviders, tc.Provider) {
		r.add(path+".provider", "unknown provider %q (want serpapi, google or bing)", tc.Provider)
	}
	if tc.Provider != "" && tc.APIKeyEnv == "" {
		r.add(path+".api_key_env", "a search provider needs api_key_env (the variable holding its key)")
	}
	if tc.URL != "" {
		if u, err := url.Parse(tc.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			r.add(path+".url", "want an http:// or https:// URL, got %q", tc.URL)
		}
	}
}

// MCPServer is the external server an mcp listener mounts: each of its tools
// becomes a listener <name>.<tool>.
type MCPServer struct {
	// Command starts a stdio server (program and arguments).
	Command []string `yaml:"command"`
	// URL is a streamable HTTP endpoint (instead of Command).
	URL string `yaml:"url"`
	// Env lists the host variables passed to Command (default none).
	Env []string `yaml:"env"`
	// Timeout bounds connecting and each call (default 30s).
	Timeout Duration `yaml:"timeout"`
	// Network declares the addresses the server itself dials ("host:port",
	// host "*" or "*.domain", port "*"): a call of its tools from a thread
	// whose profile restricts the network is refused unless the profile
	// allows each of them (and, for url, the URL's host:port). Absent: a
	// command server may dial any address, so only threads without a
	// network restriction reach it; [] : it dials nothing.
	Network NetworkList `yaml:"network"`
}

// IsZero reports whether no server was written.
func (s MCPServer) IsZero() bool {
	return len(s.Command) == 0 && s.URL == "" && len(s.Env) == 0 && s.Timeout == 0 && !s.Network.Set
}
