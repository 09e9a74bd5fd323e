package config

// Gateway is one gateways[] entry: a federated remote organism.
type Gateway struct {
	// Name is how agents address the gateway in peers; it must not clash
	// with a listener name.
	Name string `yaml:"name"`
	// RemoteURL is the remote organism's wss:// endpoint.
	RemoteURL string `yaml:"remote_url"`
	// TrustedIdentity is the path of the remote organism's Ed25519 public key.
	TrustedIdentity string `yaml:"trusted_identity"`
	// Description is shown to agents that have the gateway as a peer.
	Description string `yaml:"description"`
}
