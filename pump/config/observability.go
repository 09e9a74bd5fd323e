package config

import (
	"net"
	"os"
)

// MinScrapeTokenLen is the shortest scrape token accepted (the bus's
// bus.MinScrapeTokenLen).
const MinScrapeTokenLen = 32

// Observability is the observability: section: what an operator can see of
// the running organism.
type Observability struct {
	// Metrics configures /metrics on the main bus.
	Metrics Metrics `yaml:"metrics"`
	// Traces configures OpenTelemetry traces (off by default).
	Traces Traces `yaml:"traces"`
}

// Traces is the observability.traces: mapping: one OpenTelemetry trace per
// conversation, exported over OTLP/HTTP.
type Traces struct {
	// Enabled turns tracing on (default false). Every stage of every
	// message is then timed, whatever the metrics sample.
	Enabled bool `yaml:"enabled"`
	// OTLPEndpoint is the collector's OTLP/HTTP host:port (e.g.
	// localhost:4318); required when enabled.
	OTLPEndpoint string `yaml:"otlp_endpoint"`
	// OTLPInsecure sends spans over plain HTTP instead of HTTPS (default
	// false).
	OTLPInsecure bool `yaml:"otlp_insecure"`
}

// Metrics is the observability.metrics: mapping.
type Metrics struct {
	// Enabled serves Prometheus metrics at /metrics on the main bus, to an
	// admin session or a scraper with the scrape token (default true).
	Enabled bool `yaml:"enabled"`
	// ScrapeTokenLiteral is the scrape_token: value, a literal token of at
	// least 32 characters; prefer ScrapeTokenEnv. Read the effective token
	// through ScrapeToken(). Empty (and no env): only admins scrape.
	ScrapeTokenLiteral string `yaml:"scrape_token"`
	// ScrapeTokenEnv names the environment variable holding the scrape
	// token; when set it replaces ScrapeTokenLiteral.
	ScrapeTokenEnv string `yaml:"scrape_token_env"`
}

// ScrapeToken returns the scrape token: the value of the environment
// variable ScrapeTokenEnv when that is set, else the literal scrape_token
// ("" means none).
func (m Metrics) ScrapeToken() string {
	if m.ScrapeTokenEnv != "" {
		return os.Getenv(m.ScrapeTokenEnv)
	}
	return m.ScrapeTokenLiteral
}

func (o *Organism) checkObservability(r *reporter) {
	m := o.Observability.Metrics
	if t := m.ScrapeTokenLiteral; t != "" && len(t) < MinScrapeTokenLen {
		r.add("observability.metrics.scrape_token", "must be at least %d characters, got %d", MinScrapeTokenLen, len(t))
	}
	if m.ScrapeTokenLiteral != "" && m.ScrapeTokenEnv != "" {
		r.add("observability.metrics.scrape_token_env", "set scrape_token or scrape_token_env, not both")
	}
	tr := o.Observability.Traces
	switch {
	case tr.Enabled && tr.OTLPEndpoint == "":
		r.addAbout("observability.traces.otlp_endpoint", "observability.traces", "otlp_endpoint is required when traces are enabled")
	case tr.OTLPEndpoint != "":
		if _, _, err := net.SplitHostPort(tr.OTLPEndpoint); err != nil {
			r.add("observability.traces.otlp_endpoint", "want host:port, got %q", tr.OTLPEndpoint)
		}
	}
}
