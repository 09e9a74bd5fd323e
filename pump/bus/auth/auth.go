// Package auth holds the main bus's users, passwords (argon2id), TOTP codes
// (pquerna/otp, replay-guarded), login rate limits and bearer sessions, all
// kept in the organism's SQLite store.
package auth

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Role is what a user may do on the bus: viewers read, operators also inject,
// admins also control the organism.
type Role string

// Roles, weakest first.
const (
	Viewer   Role = "viewer"
	Operator Role = "operator"
	Admin    Role = "admin"
)

// rank orders the roles; unknown roles rank below Viewer.
func (r Role) rank() int {
	switch r {
	case Viewer:
		return 1
	case Operator:
		return 2
	case Admin:
		return 3
	}
	return 0
}

// Allows reports whether a user with role r may do what needs role need.
func (r Role) Allows(need Role) bool { return r.rank() > 0 && r.rank() >= need.rank() }

// ParseRole parses viewer, operator or admin.
func ParseRole(s string) (Role, error) {
	r := Role(s)
	if r.rank() == 0 {
		return "", fmt.Errorf("%w: %q (want viewer, operator or admin)", ErrUnknownRole, s)
	}
	return r, nil
}

// Sentinel errors. Transports map ErrInvalidCredentials and ErrInvalidToken
// to 401 and ErrRateLimited and ErrBusy to 429 (a *LimitError says how long
// to wait); they never tell a client which part of the credentials was
// wrong.
var (
	// ErrInvalidCredentials: unknown user, wrong password, wrong or replayed
	// TOTP code.
	ErrInvalidCredentials = errors.New("invalid credentials")
	// ErrRateLimited: too many failed logins for this user name from this
	// address, or for this address, or as many attempts still being
	// verified.
	ErrRateLimited = errors.New("too many failed login attempts")
	// ErrBusy: every password verification slot is taken and the queue of
	// logins waiting for one is full; nothing was verified or counted.
	ErrBusy = errors.New("too many login attempts in progress")
	// ErrInvalidToken: unknown, expired or revoked bearer token.
	ErrInvalidToken = errors.New("invalid token")
	// ErrUnknownRole: a role other than viewer, operator or admin.
	ErrUnknownRole = errors.New("unknown role")
)

// LimitError is a login refused before its credentials were verified: Err
// is ErrRateLimited or ErrBusy, Wait how long the client should wait before
// trying again.
type LimitError struct {
	Err  error
	Wait time.Duration
}

// Error implements error.
func (e *LimitError) Error() string {
	return fmt.Sprintf("%v (retry after %s)", e.Err, e.Wait)
}

// Unwrap returns Err, so errors.Is(err, ErrRateLimited) holds.
func (e *LimitError) Unwrap() error { return e.Err }

// RetryAfter is how long to wait before trying again.
func (e *LimitError) RetryAfter() time.Duration { return e.Wait }

// Credentials is one login attempt.
type Credentials struct {
	Username, Password, TOTP string
	// Addr is the client's address (IP without port), for rate limiting.
	Addr string
}

// Session is a logged-in user's bearer session.
type Session struct {
	// Token is the 64-hex bearer token (only the holder knows it; the store
	// keeps a hash).
	Token    string
	Username string
	Role     Role
	Expires  time.Time
	// Profile is the user's security profile: the conversations the
	// session begins run under it ("" for none). Read with the role, so a
	// change applies to the session's next conversation.
	Profile string
}

// Authenticator logs users in.
type Authenticator interface {
	Login(ctx context.Context, c Credentials) (Session, error)
}

// Sessions resolves and revokes bearer tokens.
type Sessions interface {
	// Session returns the live session of token, or ErrInvalidToken.
	Session(ctx context.Context, token string) (Session, error)
	// Logout revokes token.
	Logout(ctx context.Context, token string) error
}

// CodeChecker authenticates the legacy first frame of the raw XML bus,
// `<authenticate totp="NNNNNN"/>`, which carries only a TOTP code: the code
// is tried against every user's secret (replay-guarded and rate-limited like
// a login) and a session of the matching user is returned.
type CodeChecker interface {
	CheckCode(ctx context.Context, code, addr string) (Session, error)
}
