package bus

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// Defaults of Options.
const (
	// DefaultAddr is the reference server's port on the loopback interface
	// (organism.bind and --listen choose another address).
	DefaultAddr = "127.0.0.1:8765"
	// DefaultMaxFrameBytes caps one WebSocket frame (1 MiB, the envelope cap).
	DefaultMaxFrameBytes = 1 << 20
	// DefaultSendQueue is how many frames may wait for one slow client.
	DefaultSendQueue = 256
	// DefaultPingInterval is how often the server pings a WebSocket.
	DefaultPingInterval = 30 * time.Second
	// DefaultPongWait is how long a WebSocket may stay silent (no frame, no
	// pong) before it is closed.
	DefaultPongWait = 75 * time.Second
	// DefaultWriteTimeout bounds one frame write.
	DefaultWriteTimeout = 10 * time.Second
	// DefaultAuthTimeout is how long /bus waits for the legacy
	// <authenticate/> frame (the reference's 15 s).
	DefaultAuthTimeout = 15 * time.Second
)

// ErrOptions is wrapped by every Options.Validate error.
var ErrOptions = errors.New("bus options")

// Auth is what the bus needs from the user service: logins, bearer
// sessions and the legacy TOTP-only check of /bus (used only with
// Options.LegacyTOTPLogin). *auth.Service implements it.
type Auth interface {
	auth.Authenticator
	auth.Sessions
	auth.CodeChecker
}

// ErrNotSupported is returned by a Controller that cannot do what is asked
// (the in-process console cannot reload): the API answers 501.
var ErrNotSupported = errors.New("bus: not supported by this server")

// Controller stops or reloads the organism for POST /api/v1/organism/stop and
// /reload. Both are called from a request handler. Stop starts the work and
// returns (the server itself is shut down by the work). Reload applies the
// new configuration while the bus keeps serving and returns once it is in
// force (200), or with an error wrapping organism.ErrReloadRefused when it
// cannot be applied (422, the reason as the error). An error wrapping
// ErrNotSupported is answered 501.
type Controller interface {
	Stop(ctx context.Context) error
	Reload(ctx context.Context) error
}

// Options configures a Server. Zero values take the defaults.
type Options struct {
	// Addr is the listen address Serve's caller used (informational; Serve
	// takes a listener). Default DefaultAddr.
	Addr string `yaml:"addr"`
	// TLS is the server's TLS configuration (TLS 1.3, a certificate); it is
	// required unless Insecure.
	TLS *tls.Config `yaml:"-"`
	// Auth logs users in and resolves bearer tokens; required unless Insecure.
	Auth Auth `yaml:"-"`
	// Organism is the organism the bus serves (its pump, config and store);
	// required.
	Organism *organism.Organism `yaml:"-"`
	// Console answers the /ws status, listeners, threads and monitor commands
	// and its feed carries the lines listeners print (output frames).
	// Default organism.NewLocal(Organism), which sees no printed lines: pass
	// the backend organism.Assemble returned to get them.
	Console organism.Backend `yaml:"-"`
	// Store is the journal the REST API reads; default Organism.Store() (nil
	// for an in-memory organism: the journal endpoints answer 503).
	Store *store.Store `yaml:"-"`
	// Controller stops and reloads the organism (nil: those endpoints answer
	// 501).
	Controller Controller `yaml:"-"`
	// Logger receives structured logs (default slog.Default()).
	Logger *slog.Logger `yaml:"-"`
	// MaxFrameBytes caps one incoming WebSocket frame; a bigger one closes
	// the socket with 1009 "Message too big: limit N bytes" (default
	// DefaultMaxFrameBytes).
	MaxFrameBytes int64 `yaml:"max_frame_bytes"`
	// SendQueue bounds the frames waiting to be written to one client; a
	// client that falls that far behind is disconnected with 1013 (default
	// DefaultSendQueue).
	SendQueue int `yaml:"send_queue"`
	// PingInterval is how often sockets are pinged (default
	// DefaultPingInterval).
	PingInterval time.Duration `yaml:"ping_interval"`
	// PongWait is how long a socket may be silent before it is closed; it
	// must exceed PingInterval (default DefaultPongWait).
	PongWait time.Duration `yaml:"pong_wait"`
	// WriteTimeout bounds one frame write (default DefaultWriteTimeout).
	WriteTimeout time.Duration `yaml:"write_timeout"`
	// AuthTimeout bounds the wait for /bus's legacy <authenticate/> frame
	// (default DefaultAuthTimeout).
	AuthTimeout time.Duration `yaml:"auth_timeout"`
	// LegacyTOTPLogin accepts /bus clients without a bearer token that
	// authenticate with the reference's first frame <authenticate
	// totp="NNNNNN"/>: a TOTP code alone, no user name, tried against every
	// user's secret. Off by default (organism.yaml auth.legacy_totp_login):
	// such a frame is then answered with close code 1008 and
	// ReasonLegacyDisabled.
	LegacyTOTPLogin bool `yaml:"legacy_totp_login"`
	// Federation, when set, serves the federation endpoint (GET
	// /federation): peer organisms' links, which authenticate themselves
	// by their Ed25519 identities (package pump/federation).
	Federation http.Handler `yaml:"-"`
	// Metrics, when set, is served at GET /metrics (Prometheus text format)
	// to an admin session or to a request bearing ScrapeToken; the server
	// reports its open connections to it. Nil: /metrics is 404.
	Metrics Metrics `yaml:"-"`
	// ScrapeToken, when set (at least MinScrapeTokenLen characters), lets a
	// Prometheus scraper read /metrics with "Authorization: Bearer
	// <ScrapeToken>" and no session (organism.yaml
	// observability.metrics.scrape_token).
	ScrapeToken string `yaml:"-"`
	// Insecure (--insecure-dev) serves plain HTTP with no authentication:
	// every request acts as an admin. For local development only; it is
	// logged loudly.
	Insecure bool `yaml:"insecure_dev"`
}

// WithDefaults returns o with every zero field set to its default.
func (o Options) WithDefaults() Options {
	if o.Addr == "" {
		o.Addr = DefaultAddr
	}
	if o.MaxFrameBytes == 0 {
		o.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if o.SendQueue == 0 {
		o.SendQueue = DefaultSendQueue
	}
	if o.PingInterval == 0 {
		o.PingInterval = DefaultPingInterval
	}
	if o.PongWait == 0 {
		o.PongWait = max(DefaultPongWait, 2*o.PingInterval)
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.AuthTimeout == 0 {
		o.AuthTimeout = DefaultAuthTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Console == nil && o.Organism != nil {
		o.Console = organism.NewLocal(o.Organism)
	}
	if o.Store == nil && o.Organism != nil {
		o.Store = o.Organism.Store()
	}
	return o
}

// Validate reports settings that cannot work.
func (o Options) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrOptions}, args...)...))
	}
	if o.Organism == nil || o.Organism.Pump == nil {
		bad("an organism is required")
	}
	if !o.Insecure {
		if o.Auth == nil {
			bad("an authenticator is required (or insecure_dev)")
		}
		if o.TLS == nil {
			bad("a TLS configuration is required (or insecure_dev)")
		} else if len(o.TLS.Certificates) == 0 && o.TLS.GetCertificate == nil && o.TLS.GetConfigForClient == nil {
			bad("the TLS configuration has no certificate")
		}
	}
	if o.MaxFrameBytes < 0 {
		bad("max_frame_bytes %d must not be negative", o.MaxFrameBytes)
	}
	if o.SendQueue < 0 {
		bad("send_queue %d must not be negative", o.SendQueue)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"ping_interval", o.PingInterval}, {"pong_wait", o.PongWait}, {"write_timeout", o.WriteTimeout},
		{"auth_timeout", o.AuthTimeout}} {
		if d.v < 0 {
			bad("%s %v must not be negative", d.name, d.v)
		}
	}
	if o.ScrapeToken != "" && len(o.ScrapeToken) < MinScrapeTokenLen {
		bad("scrape token must be at least %d characters, got %d", MinScrapeTokenLen, len(o.ScrapeToken))
	}
	if o.PingInterval > 0 && o.PongWait > 0 && o.PongWait <= o.PingInterval {
		bad("pong_wait %v must exceed ping_interval %v", o.PongWait, o.PingInterval)
	}
	return errors.Join(errs...)
}
