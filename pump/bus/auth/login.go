package auth

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// Login checks c (rate limits first, then the password, then the TOTP code)
// and starts a session. Every failure is ErrInvalidCredentials (or
// ErrRateLimited while the user name or address is locked out) and counts
// against both the user name and the address; a success clears the user
// name's failures. A user without a TOTP secret (never created by this
// package) logs in with the password alone.
func (s *Service) Login(ctx context.Context, c Credentials) (Session, error) {
	now := s.clock()
	if s.users.locked(c.Username, now) || s.addrs.locked(c.Addr, now) {
		s.log.Warn("auth: login refused: rate limited", "user", c.Username, "addr", c.Addr)
		return Session{}, ErrRateLimited
	}
	u, err := s.st.GetUser(ctx, c.Username)
	known := err == nil
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return Session{}, fmt.Errorf("auth: login: %w", err)
	}
	var (
		match bool
		verr  error
	)
	herr := s.withHashSlot(ctx, func() {
		if !known {
			dummyVerify(c.Password, s.opts.Argon2)
			return
		}
		match, verr = verifyPassword(c.Password, u.PasswordHash)
	})
	if herr != nil {
		return Session{}, herr
	}
	switch {
	case !known:
		return Session{}, s.failed(c, now, "unknown user")
	case verr != nil:
		s.log.Error("auth: stored password hash unusable", "user", c.Username, "err", verr)
		return Session{}, s.failed(c, now, "unusable password hash")
	case !match:
		return Session{}, s.failed(c, now, "wrong password")
	}
	var step int64
	if u.TOTPSecret != "" {
		var ok bool
		if step, ok = matchTOTP(c.TOTP, u.TOTPSecret, now); !ok {
			return Session{}, s.failed(c, now, "wrong TOTP code")
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	cur, err := s.st.GetUser(ctx, c.Username)
	if errors.Is(err, store.ErrNotFound) || err == nil && (cur.PasswordHash != u.PasswordHash || cur.TOTPSecret != u.TOTPSecret) {
		return Session{}, s.failed(c, now, "credentials changed during login")
	}
	if err != nil {
		return Session{}, fmt.Errorf("auth: login: %w", err)
	}
	sess, err := s.admit(ctx, c, cur, step, now)
	if err != nil {
		return Session{}, err
	}
	s.users.reset(c.Username)
	s.log.Info("auth: login", "user", c.Username, "addr", c.Addr, "role", sess.Role)
	return sess, nil
}

// CheckCode authenticates with a TOTP code alone (the raw XML bus's legacy
// `<authenticate totp="NNNNNN"/>`): the code is tried against every user
// with a secret, skipping steps already used. A code that matches no user,
// or more than one, fails with ErrInvalidCredentials and counts against addr.
func (s *Service) CheckCode(ctx context.Context, code, addr string) (Session, error) {
	now := s.clock()
	c := Credentials{Addr: addr}
	if s.addrs.locked(addr, now) {
		s.log.Warn("auth: code refused: rate limited", "addr", addr)
		return Session{}, ErrRateLimited
	}
	if !sixDigits(code) {
		return Session{}, s.failed(c, now, "malformed TOTP code")
	}
	rows, err := s.st.ListUsers(ctx)
	if err != nil {
		return Session{}, fmt.Errorf("auth: check code: %w", err)
	}
	var (
		matched []store.UserRow
		steps   []int64
		replay  bool
	)
	for _, u := range rows {
		step, ok := matchTOTP(code, u.TOTPSecret, now)
		switch {
		case !ok:
		case step <= u.TOTPLastStep:
			replay = true
		default:
			matched, steps = append(matched, u), append(steps, step)
		}
	}
	switch {
	case len(matched) == 0 && replay:
		return Session{}, s.failed(c, now, "replayed TOTP code")
	case len(matched) == 0:
		return Session{}, s.failed(c, now, "TOTP code matches no user")
	case len(matched) > 1:
		return Session{}, s.failed(c, now, fmt.Sprintf("TOTP code matches %d users", len(matched)))
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	c.Username = matched[0].Name
	cur, err := s.st.GetUser(ctx, c.Username)
	if errors.Is(err, store.ErrNotFound) || err == nil && cur.TOTPSecret != matched[0].TOTPSecret {
		return Session{}, s.failed(c, now, "credentials changed during login")
	}
	if err != nil {
		return Session{}, fmt.Errorf("auth: check code: %w", err)
	}
	sess, err := s.admit(ctx, c, cur, steps[0], now)
	if err != nil {
		return Session{}, err
	}
	s.log.Info("auth: login by TOTP code", "user", c.Username, "addr", addr, "role", sess.Role)
	return sess, nil
}

// admit ends a login whose checks passed (s.mu held): u's TOTP step is
// taken — a step another login took meanwhile fails this one as a replay —
// and the session starts. A user without a TOTP secret has no step.
func (s *Service) admit(ctx context.Context, c Credentials, u store.UserRow, step int64, now time.Time) (Session, error) {
	if u.TOTPSecret != "" {
		if err := s.acceptStep(ctx, &u, step); err != nil {
			if errors.Is(err, ErrInvalidCredentials) {
				return Session{}, s.failed(c, now, "replayed TOTP code")
			}
			return Session{}, err
		}
	}
	return s.startSession(ctx, u, now)
}

// acceptStep records step as u's last TOTP step (with s.mu held), or fails
// with ErrInvalidCredentials when that step or a later one was already
// used.
func (s *Service) acceptStep(ctx context.Context, u *store.UserRow, step int64) error {
	ok, err := s.st.SetTOTPLastStep(ctx, u.Name, step)
	if errors.Is(err, store.ErrNotFound) {
		return ErrInvalidCredentials
	}
	if err != nil {
		return fmt.Errorf("auth: record TOTP step: %w", err)
	}
	if !ok {
		return ErrInvalidCredentials
	}
	u.TOTPLastStep = step
	return nil
}

// failed records a failed attempt of c at now for its user name (when it is
// a valid name) and address, logs it with reason, and returns
// ErrInvalidCredentials.
func (s *Service) failed(c Credentials, now time.Time, reason string) error {
	s.log.Warn("auth: login failed", "user", c.Username, "addr", c.Addr, "reason", reason)
	// Names that cannot exist are not tracked per user (the address still
	// counts), so junk names cannot grow the limiter.
	if ValidName(c.Username) == nil && s.users.fail(c.Username, now) {
		s.log.Warn("auth: user locked out", "user", c.Username, "for", s.opts.Lockout)
	}
	if s.addrs.fail(c.Addr, now) {
		s.log.Warn("auth: address locked out", "addr", c.Addr, "for", s.opts.Lockout)
	}
	return ErrInvalidCredentials
}
