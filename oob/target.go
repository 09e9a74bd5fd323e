package oob

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/federation"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// Target is what the operations act on.
type Target struct {
	// Pump is the running organism's pump (required).
	Pump *pump.Pump
	// Config is its configuration (required).
	Config *config.Organism
	// CurrentConfig, when set, returns the configuration in force, which a
	// reload replaces (organism.Organism.CurrentConfig); else Config.
	CurrentConfig func() *config.Organism
	// Journal reads thread history (nil: get-thread-history answers
	// NOT_SUPPORTED).
	Journal ThreadReader
	// Stopper stops the organism (nil: shutdown answers NOT_SUPPORTED).
	Stopper Stopper
	// LogLevel, when set, is the runtime-mutable log_level config key.
	LogLevel *slog.LevelVar
	// GatewayFile, when set, stores register-remote-gateway entries (JSON)
	// for federation to connect.
	GatewayFile string
	// ListenerFile, when set, stores the listeners register-listener adds
	// (JSON, mode 0600), so they can be registered again at the next start
	// (ReadListeners, ListenerConfig); unregister-listener removes them.
	ListenerFile string
	// Listeners adds and removes listeners while running (nil:
	// register-listener and unregister-listener answer NOT_SUPPORTED).
	// *organism.Organism implements it.
	Listeners Registrar
	// Gateways, when set, runs a gateway registered over the channel at
	// once (and stops an unregistered one); without it they are only
	// stored in GatewayFile for the next start.
	Gateways GatewayRunner
	// Federation, when set, reports the gateways get-status lists
	// (*federation.Manager implements it); nil lists none.
	Federation GatewayReporter
	// Halter is the emergency halt (nil: halt and resume answer
	// NOT_SUPPORTED); *organism.Governance implements it.
	Halter Halter
	// Reloader reloads the organism file in place (nil: reload answers
	// NOT_SUPPORTED).
	Reloader Reloader
	// Approver lists and decides approvals (nil: list-approvals and
	// decide-approval answer NOT_SUPPORTED).
	Approver Approver
}

// Reloader reads the organism file again and puts it in force in the
// running organism (what SIGHUP does for xmlpipe run). Its error says why a
// reload was refused — file:line where there is one — and wraps
// pump.ErrClosed when the organism is stopping.
type Reloader interface {
	Reload(reason string) error
}

// ReloaderFunc adapts a function to Reloader.
type ReloaderFunc func(reason string) error

// Reload calls f.
func (f ReloaderFunc) Reload(reason string) error { return f(reason) }

// Halter halts and resumes a running organism on behalf of by.
type Halter interface {
	Halt(by string, scope pump.HaltScope) (pump.HaltReport, error)
	Resume(by string) bool
	// HaltListener halts the listener called name alone; an unknown name
	// fails with an error wrapping pump.ErrUnknownListener.
	HaltListener(by, name string) (pump.HaltReport, error)
	// ResumeListener lifts that listener's own halt; false: it had none.
	ResumeListener(by, name string) bool
}

// GatewayRunner runs and stops the gateways of a running organism.
type GatewayRunner interface {
	// AddGateway starts a gateway for g; an error is answered
	// INVALID_ARGUMENT and nothing is stored.
	AddGateway(g RegisterRemoteGateway) error
	// RemoveGateway stops the gateway reaching url (a gateway not running
	// is no error).
	RemoveGateway(ctx context.Context, url string) error
}

// GatewayReporter reports the state of an organism's gateways.
type GatewayReporter interface {
	Status() []federation.GatewayStatus
}

// Registrar adds and removes listeners of a running organism.
type Registrar interface {
	// AddListener resolves lc — a catalog listener, a YAML agent
	// (lc.YAMLAgent) or a wasm listener (type wasm, module confined to the
	// organism's directory) — and adds it. An error matching
	// errors.ErrUnsupported (the organism cannot run that kind, say an
	// agent without a usable LLM backend) is answered NOT_SUPPORTED, any
	// other INVALID_ARGUMENT.
	AddListener(lc config.Listener) error
	// RemoveListener removes name once its running handlers finished.
	RemoveListener(ctx context.Context, name string) error
}

// ThreadReader reads a thread's journal entries in order (*store.Store and
// *store.Reader implement it).
type ThreadReader interface {
	Thread(id string) ([]store.Entry, error)
}

// ConversationReader is a ThreadReader that also reads every thread of a
// conversation, in seq order (*store.Store does): get-thread-history with
// conversation=true needs it (else NOT_SUPPORTED).
type ConversationReader interface {
	Conversation(id string) ([]store.Entry, error)
}

// Stopper stops the organism: graceful drains in-flight work for up to
// timeout, immediate stops at once. It returns without waiting.
type Stopper interface {
	Stop(graceful bool, timeout time.Duration, reason string)
}

// StopperFunc adapts a function to Stopper.
type StopperFunc func(graceful bool, timeout time.Duration, reason string)

// Stop calls f.
func (f StopperFunc) Stop(graceful bool, timeout time.Duration, reason string) {
	f(graceful, timeout, reason)
}

// config is the configuration in force.
func (t Target) config() *config.Organism {
	if t.CurrentConfig != nil {
		if c := t.CurrentConfig(); c != nil {
			return c
		}
	}
	return t.Config
}

// check reports a missing required field.
func (t Target) check() error {
	if t.Pump == nil || t.Config == nil {
		return errors.New("oob: target needs the pump and the configuration")
	}
	return nil
}
