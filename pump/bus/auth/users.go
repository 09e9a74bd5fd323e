package auth

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"
	"unicode/utf8"

	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// Password length limits, in characters (runes) and bytes.
const (
	// MinPasswordLen is stricter than the reference's 4 characters: with
	// TOTP as the second factor 8 is still a low bar, but 4 is guessable
	// within the rate limits of a long-lived bus.
	MinPasswordLen = 8
	// MaxPasswordBytes bounds what is hashed.
	MaxPasswordBytes = 1024
)

// User management errors.
var (
	// ErrUserExists: AddUser of a name already taken.
	ErrUserExists = errors.New("user already exists")
	// ErrUnknownUser: a management operation on a user that does not exist.
	ErrUnknownUser = errors.New("unknown user")
	// ErrInvalidName: a user name outside ^[a-z0-9][a-z0-9._-]{0,63}$.
	ErrInvalidName = errors.New("invalid user name")
	// ErrWeakPassword: a password shorter than MinPasswordLen characters or
	// longer than MaxPasswordBytes bytes.
	ErrWeakPassword = errors.New("unacceptable password")
)

// namePattern is the rule for user names.
var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// ValidName checks a user name: a lower-case letter or digit, then up to 63
// lower-case letters, digits, '.', '_' or '-'.
func ValidName(name string) error {
	if !namePattern.MatchString(name) {
		return fmt.Errorf("%w: %q (want ^[a-z0-9][a-z0-9._-]{0,63}$)", ErrInvalidName, name)
	}
	return nil
}

// ValidPassword checks a new password: at least MinPasswordLen characters
// (the reference accepted 4) and at most MaxPasswordBytes bytes.
func ValidPassword(password string) error {
	if n := utf8.RuneCountInString(password); n < MinPasswordLen {
		return fmt.Errorf("%w: %d characters, need at least %d", ErrWeakPassword, n, MinPasswordLen)
	}
	if len(password) > MaxPasswordBytes {
		return fmt.Errorf("%w: longer than %d bytes", ErrWeakPassword, MaxPasswordBytes)
	}
	return nil
}

// UserInfo is a user as listed, without secrets.
type UserInfo struct {
	Name string
	Role Role
	// Created and LastLogin; LastLogin is zero before the first login.
	Created, LastLogin time.Time
	// HasTOTP reports whether the user has a TOTP secret (users added here
	// always do).
	HasTOTP bool
	// Profile is the user's security profile ("" for none).
	Profile string
}

// AddUser creates a user with a password (at least MinPasswordLen
// characters, stricter than the reference's 4) and a fresh TOTP secret, and
// returns the secret's otpauth:// provisioning URL. It fails with
// ErrUserExists when the name is taken.
func (s *Service) AddUser(ctx context.Context, name, password string, role Role) (otpURL string, err error) {
	if err := ValidName(name); err != nil {
		return "", err
	}
	if _, err := ParseRole(string(role)); err != nil {
		return "", err
	}
	if err := ValidPassword(password); err != nil {
		return "", err
	}
	hash, err := s.newHash(ctx, password)
	if err != nil {
		return "", err
	}
	key, err := newTOTPKey(s.account(name))
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.st.GetUser(ctx, name); err == nil {
		return "", fmt.Errorf("%w: %q", ErrUserExists, name)
	} else if !errors.Is(err, store.ErrNotFound) {
		return "", fmt.Errorf("auth: %w", err)
	}
	u := store.UserRow{Name: name, PasswordHash: hash, Role: string(role), TOTPSecret: key.Secret(), Created: s.clock()}
	if err := s.st.PutUser(ctx, u); err != nil {
		return "", fmt.Errorf("auth: add user %q: %w", name, err)
	}
	s.log.Info("auth: user added", "user", name, "role", role)
	return key.URL(), nil
}

// RemoveUser deletes a user; their sessions go with them.
func (s *Service) RemoveUser(ctx context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.sessions.dropUser(name)
	err := s.st.DeleteUser(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: %q", ErrUnknownUser, name)
	}
	if err != nil {
		return fmt.Errorf("auth: remove user %q: %w", name, err)
	}
	s.pairs.forgetPrefix(pairKey(name, ""))
	s.log.Info("auth: user removed", "user", name)
	return nil
}

// ResetTOTP gives a user a new TOTP secret, revokes their sessions and
// returns the new provisioning URL.
func (s *Service) ResetTOTP(ctx context.Context, name string) (otpURL string, err error) {
	key, err := newTOTPKey(s.account(name))
	if err != nil {
		return "", err
	}
	// The replay guard restarts with the secret: codes of the old secret are
	// worthless, and the new one must work within the current step.
	err = s.update(ctx, name, true, func(u *store.UserRow) { u.TOTPSecret, u.TOTPLastStep = key.Secret(), 0 })
	if err != nil {
		return "", err
	}
	s.log.Info("auth: TOTP secret reset", "user", name)
	return key.URL(), nil
}

// SetPassword changes a user's password and revokes their sessions.
func (s *Service) SetPassword(ctx context.Context, name, password string) error {
	if err := ValidPassword(password); err != nil {
		return err
	}
	if _, err := s.getUser(ctx, name); err != nil {
		return err
	}
	hash, err := s.newHash(ctx, password)
	if err != nil {
		return err
	}
	if err := s.update(ctx, name, true, func(u *store.UserRow) { u.PasswordHash = hash }); err != nil {
		return err
	}
	s.log.Info("auth: password changed", "user", name)
	return nil
}

// SetRole changes a user's role. Live sessions take the new role at once
// (their cached copies are dropped).
func (s *Service) SetRole(ctx context.Context, name string, role Role) error {
	if _, err := ParseRole(string(role)); err != nil {
		return err
	}
	if err := s.update(ctx, name, false, func(u *store.UserRow) { u.Role = string(role) }); err != nil {
		return err
	}
	s.log.Info("auth: role changed", "user", name, "role", role)
	return nil
}

// ErrInvalidProfile: SetProfile with a name that cannot be a profile's.
var ErrInvalidProfile = errors.New("invalid profile name")

// SetProfile gives a user a security profile ("" removes it): the
// conversations their sessions begin from now on run under it (a
// conversation already running keeps the profile it began with). Whether
// the organism defines the profile is the caller's check; an undefined one
// reaches nothing (the pump fails closed).
func (s *Service) SetProfile(ctx context.Context, name, profile string) error {
	if profile != "" && !registry.ValidProfileName(profile) {
		return fmt.Errorf("%w: %q", ErrInvalidProfile, profile)
	}
	if err := s.update(ctx, name, false, func(u *store.UserRow) { u.Profile = profile }); err != nil {
		return err
	}
	s.log.Info("auth: profile changed", "user", name, "profile", profile)
	return nil
}

// Users lists every user ordered by name.
func (s *Service) Users(ctx context.Context) ([]UserInfo, error) {
	rows, err := s.st.ListUsers(ctx)
	if err != nil {
		return nil, fmt.Errorf("auth: list users: %w", err)
	}
	out := make([]UserInfo, 0, len(rows))
	for _, u := range rows {
		out = append(out, UserInfo{Name: u.Name, Role: Role(u.Role), Created: u.Created, LastLogin: u.LastLogin, HasTOTP: u.TOTPSecret != "",
			Profile: u.Profile})
	}
	return out, nil
}

// update applies change to user name's row under s.mu, writes it back and,
// when revoke is set, revokes the user's sessions.
func (s *Service) update(ctx context.Context, name string, revoke bool, change func(*store.UserRow)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.sessions.dropUser(name)
	u, err := s.getUser(ctx, name)
	if err != nil {
		return err
	}
	change(&u)
	if err := s.st.PutUser(ctx, u); err != nil {
		return fmt.Errorf("auth: update user %q: %w", name, err)
	}
	if !revoke {
		return nil
	}
	n, err := s.st.RevokeUserSessions(ctx, name)
	if err != nil {
		return fmt.Errorf("auth: revoke sessions of %q: %w", name, err)
	}
	if n > 0 {
		s.log.Info("auth: sessions revoked", "user", name, "sessions", n)
	}
	return nil
}

// newHash hashes password with the configured parameters in a hash slot,
// waiting for one however many logins wait.
func (s *Service) newHash(ctx context.Context, password string) (string, error) {
	var (
		hash string
		herr error
	)
	if err := s.hashes.wait(ctx, func() { hash, herr = hashPassword(password, s.opts.Argon2) }); err != nil {
		return "", err
	}
	return hash, herr
}
