// Package tools holds what the native tools share: their configuration (the
// tool_config entries of organism.yaml), the policy that picks the entry
// for a caller, and the roots (allowed_paths) the file-touching tools
// confine themselves to. Each tool is a listener in a subpackage, with a Go
// payload type and a result type whose Error field carries every refusal
// back to the caller as data (a handler error would reach it only as a
// generic <huh>).
package tools

import "time"

// Config restricts one tool for one caller. Zero values mean each tool's
// safe default; an empty allow-list allows nothing.
type Config struct {
	AllowedDomains []string
	// AllowedPaths are the roots files and run_command's {file}/{dir}
	// arguments are confined to (see Locate for how a path names one).
	AllowedPaths []string
	// AllowedCommands are run_command's programs and the arguments each
	// accepts (see package command).
	AllowedCommands []Command
	Env             []string
	// RunAs is the user run_command's programs run as ("" = nobody).
	RunAs string
	// SharedNamespaces are key_value namespaces every user shares; any
	// other named namespace is the calling user's own.
	SharedNamespaces []string
	ReadOnly         bool
	Timeout          time.Duration
	MaxBytes         int
	// MaxDiskBytes caps what each root of a writable files tool holds
	// (0: the tool's default; see package diskquota for how it counts).
	MaxDiskBytes int
	// MaxKeys and MaxTotalBytes cap a key_value namespace: its live keys,
	// and the bytes of their keys and values (0: the tool's defaults).
	MaxKeys       int
	MaxTotalBytes int
	// ConversationTTL is how long key_value keeps a conversation's
	// namespace after its last set or delete (0: the tool's default).
	ConversationTTL     time.Duration
	MaxRedirects        int
	MaxExpressionLength int
	MaxExponent         int
	MaxResultDigits     int
	Provider            string
	APIKey              string
	// APIKeyEnv names the environment variable APIKey was read from ("":
	// none named), so a missing key can be reported by its name.
	APIKeyEnv string
	EngineID  string
	URL       string
	Username  string
	Password  string
	// DataDir is the organism's data directory (keys, databases): no tool
	// reaches into it ("" = none to protect).
	DataDir string
}

// Command is one allowed_commands entry: a program and the argument
// patterns it accepts (none: the program takes no arguments at all).
type Command struct {
	// Name is the program: a bare name looked up in run_command's fixed
	// PATH, or an absolute path. The caller names it exactly so.
	Name string
	// Args are the accepted argument patterns: a literal, or a literal
	// prefix followed by one placeholder ({file}, {dir}, {text}, {int}).
	Args []string
}

// Policy gives a tool the configuration that applies to a caller: the
// caller's own tool_config entry for the tool, else the tool listener's.
type Policy interface {
	Config(caller, tool string) Config
}

// PolicyFunc adapts a function to Policy.
type PolicyFunc func(caller, tool string) Config

// Config calls f.
func (f PolicyFunc) Config(caller, tool string) Config { return f(caller, tool) }

// Fixed is a Policy giving every caller the same configuration.
type Fixed Config

// Config returns c.
func (c Fixed) Config(string, string) Config { return Config(c) }

// Or returns d when v is zero, else v.
func Or[T comparable](v, d T) T {
	var zero T
	if v == zero {
		return d
	}
	return v
}
