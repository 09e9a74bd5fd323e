package config

// OOB is the oob: section: the privileged out-of-band channel (package oob).
type OOB struct {
	// Enabled turns the channel on (default true). xmlpipe run serves it
	// once the owner key exists (xmlpipe keys init).
	Enabled bool `yaml:"enabled"`
	// Bind is the listen address; only loopback addresses are accepted
	// unless AllowRemote (default 127.0.0.1). An IPv6 address may be written
	// in brackets ("[::1]"), and a port after it ("[::1]:9000",
	// "localhost:9000") sets Port; after loading, Bind is the bare host.
	Bind string `yaml:"bind"`
	// Port is the channel's WebSocket port (default 8766; 0 serves only the
	// Unix socket).
	Port int `yaml:"port"`
	// UnixSocket, when set, is a Unix socket path served as well (mode 0600,
	// in a directory only the owner can enter).
	UnixSocket string `yaml:"unix_socket"`
	// AllowRemote permits a non-loopback Bind, and then requires TLS
	// (default false).
	AllowRemote bool `yaml:"allow_remote_oob"`
	// TLS is the certificate of a remote (AllowRemote) channel.
	TLS TLS `yaml:"tls"`
}
