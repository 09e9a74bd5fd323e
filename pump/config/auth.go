package config

// Auth is the auth: section: how users log in to the main bus. The
// defaults are those of the bus's user service (pump/bus/auth).
type Auth struct {
	// LegacyTOTPLogin accepts the reference's /bus first frame
	// <authenticate totp="NNNNNN"/>: a TOTP code alone, no user name, tried
	// against every user's secret (default false: /bus clients send a
	// bearer token from POST /auth/login).
	LegacyTOTPLogin bool `yaml:"legacy_totp_login"`
	// SessionTTL is how long a session lives after login (default 8h).
	SessionTTL Duration `yaml:"session_ttl"`
	// MaxFailures failed logins within FailureWindow, for one user name
	// from one address or for one address, lock that pair or address out
	// (default 5). A user locked out from one address still logs in from
	// another.
	MaxFailures int `yaml:"max_failures"`
	// FailureWindow is how long a failed login counts (default 1m).
	FailureWindow Duration `yaml:"failure_window"`
	// Lockout is how long a first lockout lasts; each consecutive lockout
	// of the same pair or address lasts twice the previous one (default
	// 1m).
	Lockout Duration `yaml:"lockout"`
	// MaxLockout caps the doubling lockouts; it must be at least Lockout
	// (default 1h).
	MaxLockout Duration `yaml:"max_lockout"`
	// MaxConcurrentHashes bounds the argon2id password verifications
	// running at once, each holding 64 MiB (default 2).
	MaxConcurrentHashes int `yaml:"max_concurrent_hashes"`
	// MaxHashQueue bounds the logins waiting for a verification slot; one
	// more is answered 429 at once (default 8).
	MaxHashQueue int `yaml:"max_hash_queue"`
}

func (o *Organism) checkAuth(r *reporter) {
	a := o.Auth
	r.positiveDuration("auth.session_ttl", a.SessionTTL)
	r.positive("auth.max_failures", a.MaxFailures)
	r.positiveDuration("auth.failure_window", a.FailureWindow)
	r.positiveDuration("auth.lockout", a.Lockout)
	r.positiveDuration("auth.max_lockout", a.MaxLockout)
	if a.Lockout > 0 && a.MaxLockout > 0 && a.MaxLockout < a.Lockout {
		r.add("auth.max_lockout", "must be at least auth.lockout (%s), got %s", a.Lockout, a.MaxLockout)
	}
	r.positive("auth.max_concurrent_hashes", a.MaxConcurrentHashes)
	r.positive("auth.max_hash_queue", a.MaxHashQueue)
}
