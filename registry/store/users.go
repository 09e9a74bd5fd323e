package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// usersSchema holds the main bus's users and their login sessions.
const usersSchema = `
CREATE TABLE IF NOT EXISTS users (
	name           TEXT    PRIMARY KEY,
	password_hash  TEXT    NOT NULL,
	role           TEXT    NOT NULL,
	totp_secret    TEXT    NOT NULL DEFAULT '',
	totp_last_step INTEGER NOT NULL DEFAULT 0,
	created_at     INTEGER,
	last_login     INTEGER,
	profile        TEXT    NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS sessions (
	token_hash TEXT    PRIMARY KEY,
	user       TEXT    NOT NULL REFERENCES users (name) ON DELETE CASCADE,
	created_at INTEGER,
	expires_at INTEGER,
	revoked    INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS sessions_user ON sessions (user);
CREATE INDEX IF NOT EXISTS sessions_expires ON sessions (expires_at);
`

// UserRow is one main-bus user.
type UserRow struct {
	// Name is the login name (primary key).
	Name string
	// PasswordHash is the encoded argon2id hash.
	PasswordHash string
	// Role is viewer, operator or admin (not interpreted here).
	Role string
	// TOTPSecret is the base32 TOTP secret, empty when TOTP is off.
	TOTPSecret string
	// TOTPLastStep is the last accepted TOTP time step (replay guard).
	TOTPLastStep int64
	// Created and LastLogin are kept exactly; LastLogin is zero before the
	// first login.
	Created, LastLogin time.Time
	// Profile is the security profile of the conversations the user
	// begins ("" for none; not interpreted here).
	Profile string
}

// userColumns are the users columns scanUser reads, in order.
const userColumns = `name, password_hash, role, totp_secret, totp_last_step, created_at, last_login, profile`

// scanUser reads one users row.
func scanUser(sc interface{ Scan(...any) error }) (UserRow, error) {
	var (
		u                UserRow
		created, lastLog sql.NullInt64
	)
	if err := sc.Scan(&u.Name, &u.PasswordHash, &u.Role, &u.TOTPSecret, &u.TOTPLastStep, &created, &lastLog, &u.Profile); err != nil {
		return UserRow{}, err
	}
	u.Created, u.LastLogin = decodeTime(created), decodeTime(lastLog)
	return u, nil
}

// PutUser inserts or updates a user and waits for the commit. Updating keeps
// the user's sessions.
func (s *Store) PutUser(ctx context.Context, u UserRow) error {
	if u.Name == "" || u.PasswordHash == "" || u.Role == "" {
		return fmt.Errorf("%w: user needs name, password hash and role (name %q)", ErrInvalid, u.Name)
	}
	created, err := encodeTime("created", u.Created)
	if err != nil {
		return err
	}
	lastLogin, err := encodeTime("last login", u.LastLogin)
	if err != nil {
		return err
	}
	_, err = s.do(ctx, "put user", func(w *writer) (int64, error) {
		return w.exec(`INSERT INTO users (`+userColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET password_hash = excluded.password_hash, role = excluded.role,
			totp_secret = excluded.totp_secret, totp_last_step = excluded.totp_last_step,
			created_at = excluded.created_at, last_login = excluded.last_login, profile = excluded.profile`,
			u.Name, u.PasswordHash, u.Role, u.TOTPSecret, u.TOTPLastStep, created, lastLogin, u.Profile)
	})
	return err
}

// GetUser returns the committed user name, or ErrNotFound.
func (s *Store) GetUser(ctx context.Context, name string) (UserRow, error) {
	if err := s.readable(); err != nil {
		return UserRow{}, err
	}
	u, err := scanUser(s.rdb.QueryRowContext(ctx, `SELECT `+userColumns+` FROM users WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return UserRow{}, fmt.Errorf("%w: user %q", ErrNotFound, name)
	}
	if err != nil {
		return UserRow{}, fmt.Errorf("store: get user %q: %w", name, err)
	}
	return u, nil
}

// ListUsers returns every committed user ordered by name.
func (s *Store) ListUsers(ctx context.Context) ([]UserRow, error) {
	return load(ctx, s, "list users", `SELECT `+userColumns+` FROM users ORDER BY name`, nil,
		func(rows *sql.Rows) (UserRow, error) { return scanUser(rows) })
}

// DeleteUser deletes a user and, by cascade, their sessions; ErrNotFound if
// there is no such user.
func (s *Store) DeleteUser(ctx context.Context, name string) error {
	_, err := s.do(ctx, "delete user", func(w *writer) (int64, error) {
		n, err := w.exec(`DELETE FROM users WHERE name = ?`, name)
		if err == nil && n == 0 {
			err = fmt.Errorf("%w: user %q", ErrNotFound, name)
		}
		return n, err
	})
	return err
}

// SetTOTPLastStep records step as the user's last accepted TOTP step if it
// is greater than the stored one, atomically. It reports whether the step was
// accepted: false means a replayed or older code. ErrNotFound if there is no
// such user.
func (s *Store) SetTOTPLastStep(ctx context.Context, user string, step int64) (bool, error) {
	n, err := s.do(ctx, "set totp step", func(w *writer) (int64, error) {
		n, err := w.exec(`UPDATE users SET totp_last_step = ? WHERE name = ? AND totp_last_step < ?`, step, user, step)
		if err != nil || n > 0 {
			return n, err
		}
		exists, err := w.queryInt64s(`SELECT 1 FROM users WHERE name = ?`, user)
		if err == nil && len(exists) == 0 {
			err = fmt.Errorf("%w: user %q", ErrNotFound, user)
		}
		return 0, err
	})
	return n > 0, err
}
