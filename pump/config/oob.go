package config

// OOB is the oob: section: the privileged out-of-band channel.
type OOB struct {
	// Enabled turns the channel on (default true).
	Enabled bool `yaml:"enabled"`
	// Bind is the listen address; only loopback addresses are accepted
	// (default 127.0.0.1).
	Bind string `yaml:"bind"`
	// Port is the channel's WebSocket port (default 8766).
	Port int `yaml:"port"`
	// UnixSocket, when set, is a Unix socket path served as well (mode 0600).
	UnixSocket string `yaml:"unix_socket"`
}
