package console

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Defaults of Config.
const (
	// DefaultPrompt is the terminal prompt.
	DefaultPrompt = "> "
	// DefaultReplyTimeout bounds how long a piped session waits for a
	// conversation to complete before reading the next line.
	DefaultReplyTimeout = 10 * time.Second
)

// ErrConfig is wrapped by every Config.Validate error.
var ErrConfig = errors.New("console config")

// NoLLMNote is printed once at start when Config.NoLLM is set.
const NoLLMNote = "note: no LLM backend is usable (none configured, or its API key is unset) — greeter answers with a template greeting"

// Config configures a Console. Zero values take the defaults.
type Config struct {
	// Verbose shows the diagnostics of failures and what was sent.
	Verbose bool `yaml:"verbose"`
	// NoLLM says the organism has no LLM backend; the console says so once.
	NoLLM bool `yaml:"no_llm"`
	// Prompt is the terminal prompt (default DefaultPrompt).
	Prompt string `yaml:"prompt"`
	// ReplyTimeout bounds the wait for a conversation to complete when input
	// is not a terminal (default DefaultReplyTimeout).
	ReplyTimeout time.Duration `yaml:"reply_timeout"`
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	if c.Prompt == "" {
		c.Prompt = DefaultPrompt
	}
	if c.ReplyTimeout == 0 {
		c.ReplyTimeout = DefaultReplyTimeout
	}
	return c
}

// Validate reports settings that cannot work.
func (c Config) Validate() error {
	var errs []error
	if c.ReplyTimeout < 0 {
		errs = append(errs, fmt.Errorf("%w: reply_timeout %v must not be negative", ErrConfig, c.ReplyTimeout))
	}
	if strings.ContainsAny(c.Prompt, "\r\n") {
		errs = append(errs, fmt.Errorf("%w: prompt %q must be a single line", ErrConfig, c.Prompt))
	}
	return errors.Join(errs...)
}
