package config

import "strings"

// Organism is the whole of organism.yaml after defaults have been applied.
type Organism struct {
	// Organism holds the organism's identity and main bus settings.
	Organism OrganismSection `yaml:"organism"`
	// MaxConcurrentPipelines bounds the messages in flight through the
	// ingress stages at once (default 50).
	MaxConcurrentPipelines int `yaml:"max_concurrent_pipelines"`
	// MaxConcurrentHandlers bounds the handlers running at once across the
	// organism (default 20).
	MaxConcurrentHandlers int `yaml:"max_concurrent_handlers"`
	// MaxConcurrentPerAgent bounds the handlers of one agent running at once
	// (default 5).
	MaxConcurrentPerAgent int `yaml:"max_concurrent_per_agent"`
	// MaxChainDepth caps the hops of one chain of forwards (default 256):
	// a message that would take a conversation past it — listeners that
	// forward to each other in a cycle — is refused and its sender told,
	// or the conversation stopped. An agent's self-iteration takes a hop
	// per iteration, so it must exceed every agent's max_iterations; unset,
	// it is raised to twice the largest of them when that is more.
	MaxChainDepth int `yaml:"max_chain_depth"`
	// MaxInFlight is the admission budget of messages from outside (default
	// 4096): a listener's backlog counts at most an eighth of it, a target
	// listener holding that eighth and a user holding a quarter wait for
	// room; see AdmitWait.
	MaxInFlight int `yaml:"max_in_flight"`
	// AdmitWait bounds how long a message from outside waits for room in
	// that budget before it is refused as busy (REST 429 with Retry-After,
	// a "busy" error frame on /ws; default 2s, 0: not at all).
	AdmitWait Duration `yaml:"admit_wait"`
	// MaxQueueWait bounds how long a message from outside is expected to
	// wait at its target listener before its handling starts: the messages
	// ahead of it there times the pace the listener works at. Beyond it the
	// message is refused at once as busy, with a Retry-After saying when
	// the backlog should be short enough (default 30s, 0: no bound; a
	// paused or halted listener's backlog is bounded by its share alone).
	MaxQueueWait Duration `yaml:"max_queue_wait"`
	// ThreadScheduling picks which thread's message runs next (default
	// breadth-first).
	ThreadScheduling Scheduling `yaml:"thread_scheduling"`
	// LLM configures the LLM router and its backends.
	LLM LLM `yaml:"llm"`
	// Listeners are the organism's capabilities, in file order.
	Listeners []Listener `yaml:"listeners"`
	// OOB configures the privileged out-of-band channel.
	OOB OOB `yaml:"oob"`
	// Meta configures meta introspection (schemas, examples, prompts).
	Meta Meta `yaml:"meta"`
	// Gateways are the federated remote organisms, in file order.
	Gateways []Gateway `yaml:"gateways"`
	// Platform holds kernel limits: context buffer, prompt registry, LLM
	// platform limits and idle thread collection.
	Platform Platform `yaml:"platform"`
	// Journal configures the message journal and its retention.
	Journal Journal `yaml:"journal"`
	// Budgets configures token budgets per thread and per agent.
	Budgets Budgets `yaml:"budgets"`
	// Auth configures logins to the main bus.
	Auth Auth `yaml:"auth"`
	// Observability configures metrics at /metrics on the main bus.
	Observability Observability `yaml:"observability"`
	// Prompts are named prompt blocks; an agent's prompt may name them,
	// composed with "&" ("style & safety").
	Prompts map[string]string `yaml:"prompts"`
	// Routing configures semantic routing: the embedding provider and the
	// models that fill payloads from descriptions.
	Routing Routing `yaml:"routing"`
	// Constitution lists Agent OS constitution documents (Markdown with
	// YAML frontmatter, package pump/guardian), relative to this file:
	// their bodies extend or replace the constitution text of the agents
	// in their scope, their rules refuse messages or send them to a human.
	// It applies at the next start (a reload that changes it is refused).
	Constitution []string `yaml:"constitution"`
	// Governance tunes the guardian's alerts.
	Governance Governance `yaml:"governance"`
	// Profiles are the security profiles, by name (profile.go). Without
	// any, every thread reaches every listener.
	Profiles map[string]Profile `yaml:"profiles"`
	// Memory is the memory consent policy of agents with memory (package
	// listeners/memory): ask (default), always or never.
	Memory Memory `yaml:"memory"`
	// AEIOU tunes AEIOU v3 loop control (agents with loop_control: aeiou).
	AEIOU AEIOU `yaml:"aeiou"`

	file      string              // name the file was loaded under
	dir       string              // absolute directory relative paths resolve against
	positions map[string]Position // key path → where it was written
	bad       map[string]bool     // paths that failed to decode
	written   map[string]string   // resolved path → the relative path the file wrote
	bindPort  int                 // the port oob.bind named (0: none, -1: not a port)
	external  []string            // listeners given outside the configuration (LoadWith)
}

// OrganismSection is the organism: mapping.
type OrganismSection struct {
	// Name identifies the organism: root of every thread chain, boot
	// message, console banners (default "unnamed").
	Name string `yaml:"name"`
	// Port is the main bus (HTTPS+WSS) port (default 8765).
	Port int `yaml:"port"`
	// Bind is the address the main bus listens on: an IP address
	// (127.0.0.1, ::1, 0.0.0.0 for every interface, …) or localhost
	// (default 127.0.0.1: the bus is reachable from this machine only).
	Bind string `yaml:"bind"`
	// Identity is the path of the organism's Ed25519 private key; "" means
	// the default key file inside DataDir.
	Identity string `yaml:"identity"`
	// TLS names the main bus certificate; both empty means a self-signed
	// certificate generated in DataDir on first run.
	TLS TLS `yaml:"tls"`
	// DataDir holds SQLite, keys and certificates; always absolute after
	// loading (default "data" beside the configuration file).
	DataDir string `yaml:"data_dir"`
	// MaxMessageBytes caps the size of one envelope (default 1 MiB).
	MaxMessageBytes int `yaml:"max_message_bytes"`
}

// TLS names a PEM certificate chain and its private key.
type TLS struct {
	// Cert is the certificate chain path.
	Cert string `yaml:"cert"`
	// Key is the private key path.
	Key string `yaml:"key"`
}

// Enabled reports whether a certificate was configured.
func (t TLS) Enabled() bool { return t.Cert != "" && t.Key != "" }

// Listener returns the listener with the given name, compared
// case-insensitively as routing does.
func (o *Organism) Listener(name string) (Listener, bool) {
	for _, l := range o.Listeners {
		if strings.EqualFold(l.Name, name) {
			return l, true
		}
	}
	return Listener{}, false
}

// Gateway returns the gateway with the given name, compared
// case-insensitively.
func (o *Organism) Gateway(name string) (Gateway, bool) {
	for _, g := range o.Gateways {
		if strings.EqualFold(g.Name, name) {
			return g, true
		}
	}
	return Gateway{}, false
}
