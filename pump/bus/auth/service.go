package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// Service keeps the main bus's users and sessions in the store and logs
// users in. It is safe for concurrent use. It must be the only writer of the
// store's users (the store's directory lock makes it the only one per data
// directory, as long as one Service is built per Store).
type Service struct {
	st    *store.Store
	opts  Options
	log   *slog.Logger
	clock func() time.Time

	// pairs and addrs count failed logins per user name and address pair
	// (see pairKey) and per address (see addrKey).
	pairs, addrs *limiter
	// hashes bounds concurrent argon2id computations and the logins
	// waiting for one.
	hashes *hashGate
	// mu serialises every read-modify-write of a user row and the creation
	// of sessions, so a login that verified a password cannot race a
	// password change, and a LastLogin update cannot undo a newer TOTP step.
	mu sync.Mutex
	// sessions answers Session from memory (dropped on every change).
	sessions sessionCache
}

// Compile-time checks that Service implements the bus's interfaces.
var (
	_ Authenticator = (*Service)(nil)
	_ Sessions      = (*Service)(nil)
	_ CodeChecker   = (*Service)(nil)
)

// New returns a Service over st.
func New(st *store.Store, opts Options) (*Service, error) {
	if st == nil {
		return nil, fmt.Errorf("%w: nil store", ErrInvalidOptions)
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	return &Service{
		st:     st,
		opts:   opts,
		log:    opts.Logger,
		clock:  opts.Clock,
		pairs:  newLimiter(opts.MaxFailures, opts.FailureWindow, opts.Lockout, opts.MaxLockout),
		addrs:  newLimiter(opts.MaxFailures, opts.FailureWindow, opts.Lockout, opts.MaxLockout),
		hashes: newHashGate(opts.MaxConcurrentHashes, opts.MaxHashQueue),
	}, nil
}

// Sweep deletes expired sessions from the store and forgets stale
// rate-limit entries. The bus server calls it periodically.
func (s *Service) Sweep(ctx context.Context) error {
	now := s.clock()
	n, err := s.st.DeleteExpiredSessions(ctx, now)
	if err != nil {
		return fmt.Errorf("auth: sweep sessions: %w", err)
	}
	forgot := s.pairs.prune(now) + s.addrs.prune(now)
	s.sessions.prune(now)
	if n > 0 || forgot > 0 {
		s.log.Debug("auth: swept", "expired_sessions", n, "rate_limit_keys", forgot)
	}
	return nil
}

// account is the TOTP account name of user.
func (s *Service) account(user string) string {
	if s.opts.Organism == "" {
		return user
	}
	return user + "@" + s.opts.Organism
}

// getUser returns user's row, mapping store.ErrNotFound to ErrUnknownUser.
func (s *Service) getUser(ctx context.Context, name string) (store.UserRow, error) {
	u, err := s.st.GetUser(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return store.UserRow{}, fmt.Errorf("%w: %q", ErrUnknownUser, name)
	}
	if err != nil {
		return store.UserRow{}, fmt.Errorf("auth: %w", err)
	}
	return u, nil
}

// Now is the time by the service's clock (Options.Clock): a session
// expires when Now passes its Expires.
func (s *Service) Now() time.Time { return s.clock() }
