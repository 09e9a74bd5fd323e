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
	// DefaultReplyTimeout bounds how long a piped session waits for each
	// conversation it started to complete before it ends.
	DefaultReplyTimeout = 10 * time.Minute
	// DefaultLineWait is how long a piped session waits after an @ line
	// for its conversation before reading the next line (so quick answers
	// print in order); a slower one goes on and is waited for at the end.
	DefaultLineWait = 10 * time.Second
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
	// ReplyTimeout bounds the wait for each conversation a session started
	// when input is not a terminal: the session ends (at /quit or the end
	// of input) only once they all completed or this long passed since
	// each began (default DefaultReplyTimeout).
	ReplyTimeout time.Duration `yaml:"reply_timeout"`
	// LineWait is how long a piped session waits after an @ line before
	// reading the next (default DefaultLineWait, at most ReplyTimeout).
	LineWait time.Duration `yaml:"line_wait"`
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	if c.Prompt == "" {
		c.Prompt = DefaultPrompt
	}
	if c.ReplyTimeout == 0 {
		c.ReplyTimeout = DefaultReplyTimeout
	}
	if c.LineWait == 0 {
		c.LineWait = DefaultLineWait
	}
	c.LineWait = min(c.LineWait, c.ReplyTimeout)
	return c
}

// Validate reports settings that cannot work.
func (c Config) Validate() error {
	var errs []error
	if c.ReplyTimeout < 0 {
		errs = append(errs, fmt.Errorf("%w: reply_timeout %v must not be negative", ErrConfig, c.ReplyTimeout))
	}
	if c.LineWait < 0 {
		errs = append(errs, fmt.Errorf("%w: line_wait %v must not be negative", ErrConfig, c.LineWait))
	}
	if strings.ContainsAny(c.Prompt, "\r\n") {
		errs = append(errs, fmt.Errorf("%w: prompt %q must be a single line", ErrConfig, c.Prompt))
	}
	return errors.Join(errs...)
}
