package auth

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Defaults applied to zero Options fields.
const (
	// DefaultSessionTTL is how long a session lives after login.
	DefaultSessionTTL = 8 * time.Hour
	// DefaultMaxFailures is how many failed logins within FailureWindow lock
	// a user name and address pair, or an address, out.
	DefaultMaxFailures = 5
	// DefaultFailureWindow is the window in which failures are counted.
	DefaultFailureWindow = time.Minute
	// DefaultLockout is how long a first lockout lasts; each consecutive
	// lockout of the same key lasts twice the previous one.
	DefaultLockout = time.Minute
	// DefaultMaxLockout caps the doubling lockouts.
	DefaultMaxLockout = time.Hour
	// DefaultMaxConcurrentHashes bounds the argon2id computations running at
	// once (each holds Argon2.MemoryKiB of memory).
	DefaultMaxConcurrentHashes = 2
	// DefaultMaxHashQueue bounds the logins waiting for a hash slot; one
	// more is refused at once with ErrBusy.
	DefaultMaxHashQueue = 8
)

// ErrInvalidOptions reports unusable Options.
var ErrInvalidOptions = errors.New("auth: invalid options")

// Argon2Params are the argon2id cost parameters for new password hashes.
// Existing hashes keep the parameters recorded in them. Zero fields take the
// second recommended option of RFC 9106 (t=3, m=64 MiB, p=4).
type Argon2Params struct {
	// Time is the number of passes (default 3).
	Time uint32 `yaml:"time"`
	// MemoryKiB is the memory in KiB (default 65536, i.e. 64 MiB).
	MemoryKiB uint32 `yaml:"memory_kib"`
	// Threads is the degree of parallelism (default 4).
	Threads uint8 `yaml:"threads"`
}

// withDefaults returns p with every zero field set to its default.
func (p Argon2Params) withDefaults() Argon2Params {
	if p.Time == 0 {
		p.Time = 3
	}
	if p.MemoryKiB == 0 {
		p.MemoryKiB = 64 * 1024
	}
	if p.Threads == 0 {
		p.Threads = 4
	}
	return p
}

// Options configures a Service. The zero value is valid: every zero field
// takes its default.
type Options struct {
	// SessionTTL is the lifetime of a session (default 8h).
	SessionTTL time.Duration `yaml:"session_ttl"`
	// MaxFailures failed logins within FailureWindow, for one user name from
	// one address (the pair) or for one address, lock that pair or address
	// out (default 5). A user locked out from one address still logs in
	// from another. Attempts reserve their place in this budget before they
	// are verified, so at most MaxFailures are verified however many arrive
	// at once.
	MaxFailures int `yaml:"max_failures"`
	// FailureWindow is how long a failure counts (default 1m).
	FailureWindow time.Duration `yaml:"failure_window"`
	// Lockout is how long a first lockout refuses the pair or address, even
	// with correct credentials (default 1m). Each consecutive lockout of the
	// same key lasts twice the previous one, up to MaxLockout.
	Lockout time.Duration `yaml:"lockout"`
	// MaxLockout caps the doubling lockouts (default 1h, or Lockout when
	// that is longer). A key that stays out of lockout for MaxLockout
	// starts again from Lockout.
	MaxLockout time.Duration `yaml:"max_lockout"`
	// Argon2 are the cost parameters of new password hashes; tests set cheap
	// ones.
	Argon2 Argon2Params `yaml:"argon2"`
	// MaxConcurrentHashes bounds concurrent argon2id computations, so a burst
	// of logins cannot exhaust memory (default 2).
	MaxConcurrentHashes int `yaml:"max_concurrent_hashes"`
	// MaxHashQueue bounds the logins waiting for a hash slot; a login that
	// finds the queue full fails at once with ErrBusy (default 8). User
	// management (AddUser, SetPassword) waits regardless.
	MaxHashQueue int `yaml:"max_hash_queue"`
	// Organism names the organism in TOTP provisioning URLs: the account is
	// "user@organism" (just "user" when empty).
	Organism string `yaml:"-"`
	// Clock returns the current time (default time.Now).
	Clock func() time.Time `yaml:"-"`
	// Logger receives security events (default slog.Default()). Passwords
	// and codes are never logged.
	Logger *slog.Logger `yaml:"-"`
}

// Validate reports negative or inconsistent values.
func (o Options) Validate() error {
	switch {
	case o.SessionTTL < 0:
		return fmt.Errorf("%w: session_ttl %s is negative", ErrInvalidOptions, o.SessionTTL)
	case o.MaxFailures < 0:
		return fmt.Errorf("%w: max_failures %d is negative", ErrInvalidOptions, o.MaxFailures)
	case o.FailureWindow < 0:
		return fmt.Errorf("%w: failure_window %s is negative", ErrInvalidOptions, o.FailureWindow)
	case o.Lockout < 0:
		return fmt.Errorf("%w: lockout %s is negative", ErrInvalidOptions, o.Lockout)
	case o.MaxLockout < 0:
		return fmt.Errorf("%w: max_lockout %s is negative", ErrInvalidOptions, o.MaxLockout)
	case o.MaxLockout > 0 && o.Lockout > o.MaxLockout:
		return fmt.Errorf("%w: lockout %s exceeds max_lockout %s", ErrInvalidOptions, o.Lockout, o.MaxLockout)
	case o.MaxConcurrentHashes < 0:
		return fmt.Errorf("%w: max_concurrent_hashes %d is negative", ErrInvalidOptions, o.MaxConcurrentHashes)
	case o.MaxHashQueue < 0:
		return fmt.Errorf("%w: max_hash_queue %d is negative", ErrInvalidOptions, o.MaxHashQueue)
	}
	if p := o.Argon2.withDefaults(); p.MemoryKiB < 8*uint32(p.Threads) {
		return fmt.Errorf("%w: argon2 memory_kib %d is below 8 × threads (%d)", ErrInvalidOptions, p.MemoryKiB, p.Threads)
	}
	return nil
}

// withDefaults returns o with every zero field set to its default.
func (o Options) withDefaults() Options {
	if o.SessionTTL == 0 {
		o.SessionTTL = DefaultSessionTTL
	}
	if o.MaxFailures == 0 {
		o.MaxFailures = DefaultMaxFailures
	}
	if o.FailureWindow == 0 {
		o.FailureWindow = DefaultFailureWindow
	}
	if o.Lockout == 0 {
		o.Lockout = DefaultLockout
	}
	if o.MaxLockout == 0 {
		o.MaxLockout = max(DefaultMaxLockout, o.Lockout)
	}
	if o.MaxConcurrentHashes == 0 {
		o.MaxConcurrentHashes = DefaultMaxConcurrentHashes
	}
	if o.MaxHashQueue == 0 {
		o.MaxHashQueue = DefaultMaxHashQueue
	}
	o.Argon2 = o.Argon2.withDefaults()
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}
