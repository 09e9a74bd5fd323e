package config

import "time"

// Gateway is one gateways[] entry: a federated remote organism, reached over
// a mutually authenticated WSS link (package pump/federation).
type Gateway struct {
	// Name is how agents address the gateway in peers (naming it allows all
	// its imports) and what the remote organism's calls come from here; it
	// must not clash with a listener name.
	Name string `yaml:"name"`
	// RemoteURL is the remote organism's bus address, wss://host:port (the
	// federation endpoint's path, /federation, is implied). Empty: this side
	// only accepts the peer's inbound link.
	RemoteURL string `yaml:"remote_url"`
	// TrustedIdentity is the path of the remote organism's Ed25519 public
	// identity file, as `xmlpipe keys export` writes it.
	TrustedIdentity string `yaml:"trusted_identity"`
	// Description is shown to agents that have the gateway as a peer.
	Description string `yaml:"description"`
	// Export lists the local payload root tags the peer may call. Tags are
	// unqualified names: the privileged and system vocabularies are
	// namespaced, so no entry can name them (and the link refuses them).
	Export []string `yaml:"export"`
	// Import lists the peer's payload root tags local callers may reach:
	// each becomes a local listener named like the peer's.
	Import []string `yaml:"import"`
	// QueueLimit bounds the calls (and the cancels of calls) waiting in the
	// journal while the link is down; a call beyond it fails at once with a
	// clear error (default DefaultGatewayQueueLimit). The answers to the
	// peer's calls are not bounded by it: they are kept until delivered.
	QueueLimit int `yaml:"queue_limit"`
	// QueueBytes bounds the signed bytes of the calls (and cancels) waiting
	// as QueueLimit bounds their number: they are held in memory too, and
	// 10000 calls of up to a link frame (8 MiB) each would be 80 GiB. A
	// call that would pass it fails at once with a clear error; the first
	// waiting call always fits (default DefaultGatewayQueueBytes). Answers
	// to the peer's calls are not bounded by it.
	QueueBytes int `yaml:"queue_bytes"`
	// CallTimeout bounds how long a call waits for the peer's answer,
	// outages included (default DefaultGatewayCallTimeout).
	CallTimeout Duration `yaml:"call_timeout"`
	// Profile names the profile of the conversations the peer begins here
	// (what its calls are granted): they reach only that profile's
	// listeners. "" grants every exported one.
	Profile string `yaml:"profile"`
	// TrustedKey is the peer's raw Ed25519 public key, used instead of
	// TrustedIdentity when set: gateways stored by the OOB channel's
	// register-remote-gateway carry their key, not a file.
	TrustedKey []byte `yaml:"-"`
}

// Gateway defaults.
const (
	DefaultGatewayQueueLimit  = 10000
	DefaultGatewayQueueBytes  = 64 << 20
	DefaultGatewayCallTimeout = 5 * time.Minute
)

// QueueByteLimit returns the gateway's queue_bytes with its default
// applied.
func (g Gateway) QueueByteLimit() int {
	if g.QueueBytes <= 0 {
		return DefaultGatewayQueueBytes
	}
	return g.QueueBytes
}

// Limits returns the gateway's queue limit and call timeout with defaults
// applied.
func (g Gateway) Limits() (queue int, timeout time.Duration) {
	queue, timeout = g.QueueLimit, g.CallTimeout.D()
	if queue <= 0 {
		queue = DefaultGatewayQueueLimit
	}
	if timeout <= 0 {
		timeout = DefaultGatewayCallTimeout
	}
	return queue, timeout
}
