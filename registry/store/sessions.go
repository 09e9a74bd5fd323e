package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// SessionRow is one main-bus login session. Only a hash of the token is
// stored.
type SessionRow struct {
	// TokenHash identifies the session (primary key).
	TokenHash string
	// User is the session's user; deleting the user deletes the session.
	User string
	// Created and Expires are kept exactly.
	Created, Expires time.Time
	// Revoked marks a logged-out or revoked session.
	Revoked bool
}

// PutSession inserts or replaces a session and waits for the commit. The
// user must exist.
func (s *Store) PutSession(ctx context.Context, r SessionRow) error {
	if r.TokenHash == "" || r.User == "" {
		return fmt.Errorf("%w: session needs token hash and user (user %q)", ErrInvalid, r.User)
	}
	created, err := encodeTime("created", r.Created)
	if err != nil {
		return err
	}
	expires, err := encodeTime("expires", r.Expires)
	if err != nil {
		return err
	}
	_, err = s.do(ctx, "put session", func(w *writer) (int64, error) {
		exists, err := w.queryInt64s(`SELECT 1 FROM users WHERE name = ?`, r.User)
		if err != nil {
			return 0, err
		}
		if len(exists) == 0 {
			return 0, fmt.Errorf("%w: user %q", ErrNotFound, r.User)
		}
		return w.exec(`INSERT OR REPLACE INTO sessions (token_hash, user, created_at, expires_at, revoked)
			VALUES (?, ?, ?, ?, ?)`, r.TokenHash, r.User, created, expires, r.Revoked)
	})
	return err
}

// GetSession returns the committed session, or ErrNotFound. Callers check
// Revoked and Expires.
func (s *Store) GetSession(ctx context.Context, tokenHash string) (SessionRow, error) {
	if err := s.readable(); err != nil {
		return SessionRow{}, err
	}
	var (
		r                SessionRow
		created, expires sql.NullInt64
	)
	err := s.rdb.QueryRowContext(ctx, `SELECT token_hash, user, created_at, expires_at, revoked
		FROM sessions WHERE token_hash = ?`, tokenHash).Scan(&r.TokenHash, &r.User, &created, &expires, &r.Revoked)
	if errors.Is(err, sql.ErrNoRows) {
		return SessionRow{}, fmt.Errorf("%w: session", ErrNotFound)
	}
	if err != nil {
		return SessionRow{}, fmt.Errorf("store: get session: %w", err)
	}
	r.Created, r.Expires = decodeTime(created), decodeTime(expires)
	return r, nil
}

// RevokeSession marks one session revoked; ErrNotFound if it does not
// exist.
func (s *Store) RevokeSession(ctx context.Context, tokenHash string) error {
	_, err := s.do(ctx, "revoke session", func(w *writer) (int64, error) {
		n, err := w.exec(`UPDATE sessions SET revoked = 1 WHERE token_hash = ?`, tokenHash)
		if err == nil && n == 0 {
			err = fmt.Errorf("%w: session", ErrNotFound)
		}
		return n, err
	})
	return err
}

// RevokeUserSessions marks every unrevoked session of user revoked and
// returns how many it revoked.
func (s *Store) RevokeUserSessions(ctx context.Context, user string) (int, error) {
	n, err := s.do(ctx, "revoke user sessions", func(w *writer) (int64, error) {
		return w.exec(`UPDATE sessions SET revoked = 1 WHERE user = ? AND revoked = 0`, user)
	})
	return int(n), err
}

// DeleteExpiredSessions deletes sessions that expired before now and
// returns how many it deleted.
func (s *Store) DeleteExpiredSessions(ctx context.Context, now time.Time) (int, error) {
	n, err := s.do(ctx, "delete expired sessions", func(w *writer) (int64, error) {
		return w.exec(`DELETE FROM sessions WHERE expires_at IS NOT NULL AND expires_at < ?`, now.UnixNano())
	})
	return int(n), err
}
