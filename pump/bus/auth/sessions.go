package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// tokenBytes is the size of a bearer token before hex encoding.
const tokenBytes = 32

// newToken returns 32 random bytes as 64 lower-case hex characters.
func newToken() (string, error) {
	b := make([]byte, tokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("auth: token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// tokenHash is the stored identity of token: the hex SHA-256 of its text.
func tokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// wellFormedToken reports whether token is 64 lower-case hex characters.
func wellFormedToken(token string) bool {
	if len(token) != 2*tokenBytes {
		return false
	}
	for i := range len(token) {
		if c := token[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// startSession stores a new session of u starting at now (with s.mu held)
// and records the login time.
func (s *Service) startSession(ctx context.Context, u store.UserRow, now time.Time) (Session, error) {
	role, err := ParseRole(u.Role)
	if err != nil {
		return Session{}, fmt.Errorf("auth: user %q: %w", u.Name, err)
	}
	token, err := newToken()
	if err != nil {
		return Session{}, err
	}
	u.LastLogin = now
	if err := s.st.PutUser(ctx, u); err != nil {
		return Session{}, fmt.Errorf("auth: record login of %q: %w", u.Name, err)
	}
	row := store.SessionRow{TokenHash: tokenHash(token), User: u.Name, Created: now, Expires: now.Add(s.opts.SessionTTL)}
	if err := s.st.PutSession(ctx, row); err != nil {
		return Session{}, fmt.Errorf("auth: store session of %q: %w", u.Name, err)
	}
	return Session{Token: token, Username: u.Name, Role: role, Expires: row.Expires, Profile: u.Profile}, nil
}

// Session returns the live session of token with the user's current role,
// or ErrInvalidToken when the token is unknown, expired or revoked. A
// session read from the store is answered from memory for a while (see
// sessionCache): the Service drops it the moment it changes it.
func (s *Service) Session(ctx context.Context, token string) (Session, error) {
	if !wellFormedToken(token) {
		return Session{}, fmt.Errorf("%w: malformed", ErrInvalidToken)
	}
	hash := tokenHash(token)
	now := s.clock()
	if e, ok := s.sessions.get(hash, now); ok {
		if !now.Before(e.expires) {
			return Session{}, fmt.Errorf("%w: expired", ErrInvalidToken)
		}
		return Session{Token: token, Username: e.user, Role: e.role, Expires: e.expires, Profile: e.profile}, nil
	}
	gen := s.sessions.generation()
	row, err := s.st.GetSession(ctx, hash)
	if errors.Is(err, store.ErrNotFound) {
		return Session{}, fmt.Errorf("%w: unknown", ErrInvalidToken)
	}
	if err != nil {
		return Session{}, fmt.Errorf("auth: session: %w", err)
	}
	switch {
	case row.Revoked:
		return Session{}, fmt.Errorf("%w: revoked", ErrInvalidToken)
	case !now.Before(row.Expires):
		return Session{}, fmt.Errorf("%w: expired", ErrInvalidToken)
	}
	u, err := s.st.GetUser(ctx, row.User)
	if errors.Is(err, store.ErrNotFound) {
		return Session{}, fmt.Errorf("%w: user gone", ErrInvalidToken)
	}
	if err != nil {
		return Session{}, fmt.Errorf("auth: session: %w", err)
	}
	role, err := ParseRole(u.Role)
	if err != nil {
		s.log.Error("auth: stored role unusable", "user", u.Name, "err", err)
		return Session{}, fmt.Errorf("%w: user %q has no valid role", ErrInvalidToken, u.Name)
	}
	s.sessions.put(hash, cachedSession{user: u.Name, role: role, profile: u.Profile, expires: row.Expires, fetched: now}, gen)
	return Session{Token: token, Username: u.Name, Role: role, Expires: row.Expires, Profile: u.Profile}, nil
}

// Logout revokes token; ErrInvalidToken when there is no such session.
func (s *Service) Logout(ctx context.Context, token string) error {
	if !wellFormedToken(token) {
		return fmt.Errorf("%w: malformed", ErrInvalidToken)
	}
	hash := tokenHash(token)
	defer s.sessions.drop(hash)
	err := s.st.RevokeSession(ctx, hash)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: unknown", ErrInvalidToken)
	}
	if err != nil {
		return fmt.Errorf("auth: logout: %w", err)
	}
	return nil
}
