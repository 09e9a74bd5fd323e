package organism

import (
	"context"
	"net"
	"strconv"
)

// Settings is the part of the organism's configuration a console shows
// (/config): where it runs and how it schedules, never a secret.
type Settings struct {
	// Organism is organism.name.
	Organism string
	// File is the configuration file ("" when unknown: built in code, or
	// not told over a connection).
	File string
	// Bus is the main bus address (organism.bind:organism.port).
	Bus string
	// OOB is the out-of-band channel's address(es), "" when disabled.
	OOB string
	// ThreadScheduling is breadth-first or depth-first.
	ThreadScheduling string
	// The concurrency and admission limits.
	MaxConcurrentPipelines, MaxConcurrentHandlers, MaxConcurrentPerAgent int
	MaxChainDepth, MaxInFlight                                           int
}

// ConfigReporter is an optional Backend capability: the organism's
// settings for /config (read-only).
type ConfigReporter interface {
	Settings(ctx context.Context) (Settings, error)
}

var _ ConfigReporter = (*Local)(nil)

// Settings implements ConfigReporter from the configuration in effect (the
// last reload's).
func (l *Local) Settings(context.Context) (Settings, error) {
	c := l.org.CurrentConfig()
	st := Settings{
		Organism:               c.Organism.Name,
		File:                   c.File(),
		Bus:                    net.JoinHostPort(c.Organism.Bind, strconv.Itoa(c.Organism.Port)),
		ThreadScheduling:       string(c.ThreadScheduling),
		MaxConcurrentPipelines: c.MaxConcurrentPipelines,
		MaxConcurrentHandlers:  c.MaxConcurrentHandlers,
		MaxConcurrentPerAgent:  c.MaxConcurrentPerAgent,
		MaxChainDepth:          c.MaxChainDepth,
		MaxInFlight:            c.MaxInFlight,
	}
	if c.OOB.Enabled {
		st.OOB = OOBAddress(c.OOB.Bind, c.OOB.Port, c.OOB.UnixSocket)
	}
	return st, nil
}

// OOBAddress renders the out-of-band channel's addresses: host:port, the
// Unix socket, or both.
func OOBAddress(bind string, port int, socket string) string {
	var out string
	if port > 0 {
		out = net.JoinHostPort(bind, strconv.Itoa(port))
	}
	if socket != "" {
		if out != "" {
			out += " and "
		}
		out += socket
	}
	return out
}
