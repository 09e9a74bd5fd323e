package auth

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// Login checks c and starts a session. The attempt first reserves a slot
// in the failure budget of its user name and address pair and of its
// address (a *LimitError wrapping ErrRateLimited when either is locked out
// or its budget is taken), then waits for a hash slot in a bounded queue
// (a *LimitError wrapping ErrBusy when the queue is full: nothing is
// counted), then checks the password and the TOTP code. Every failure is
// ErrInvalidCredentials and counts against the pair and the address; a
// success forgives the pair. A user without a TOTP secret (never created by
// this package) logs in with the password alone.
func (s *Service) Login(ctx context.Context, c Credentials) (Session, error) {
	a, err := s.begin(c)
	if err != nil {
		return Session{}, err
	}
	defer a.release()
	u, err := s.st.GetUser(ctx, c.Username)
	known := err == nil
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return Session{}, fmt.Errorf("auth: login: %w", err)
	}
	var (
		match bool
		verr  error
	)
	herr := s.hashes.try(ctx, func() {
		if !known {
			dummyVerify(c.Password, s.opts.Argon2)
			return
		}
		match, verr = verifyPassword(c.Password, u.PasswordHash)
	})
	if errors.Is(herr, ErrBusy) {
		s.log.Warn("auth: login refused: too many in progress", "user", c.Username, "addr", c.Addr)
		return Session{}, &LimitError{Err: ErrBusy, Wait: pendingRetry}
	}
	if herr != nil {
		return Session{}, herr
	}
	switch {
	case !known:
		return Session{}, a.fail("unknown user")
	case verr != nil:
		s.log.Error("auth: stored password hash unusable", "user", c.Username, "err", verr)
		return Session{}, a.fail("unusable password hash")
	case !match:
		return Session{}, a.fail("wrong password")
	}
	now := s.clock()
	var step int64
	if u.TOTPSecret != "" {
		var ok bool
		if step, ok = matchTOTP(c.TOTP, u.TOTPSecret, now); !ok {
			return Session{}, a.fail("wrong TOTP code")
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	cur, err := s.st.GetUser(ctx, c.Username)
	if errors.Is(err, store.ErrNotFound) || err == nil && (cur.PasswordHash != u.PasswordHash || cur.TOTPSecret != u.TOTPSecret) {
		return Session{}, a.fail("credentials changed during login")
	}
	if err != nil {
		return Session{}, fmt.Errorf("auth: login: %w", err)
	}
	sess, err := s.admit(ctx, a, cur, step, now)
	if err != nil {
		return Session{}, err
	}
	a.succeed()
	s.log.Info("auth: login", "user", c.Username, "addr", c.Addr, "role", sess.Role)
	return sess, nil
}

// CheckCode authenticates with a TOTP code alone (the raw XML bus's legacy
// `<authenticate totp="NNNNNN"/>`): the code is tried against every user
// with a secret, skipping steps already used. A code that matches no user,
// or more than one, fails with ErrInvalidCredentials and counts against
// addr, whose budget is reserved first as Login's is (a *LimitError
// wrapping ErrRateLimited while it is locked out or taken). The bus offers
// it only when the legacy login is enabled.
func (s *Service) CheckCode(ctx context.Context, code, addr string) (Session, error) {
	a, err := s.begin(Credentials{Addr: addr})
	if err != nil {
		return Session{}, err
	}
	defer a.release()
	now := s.clock()
	if !sixDigits(code) {
		return Session{}, a.fail("malformed TOTP code")
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
		return Session{}, a.fail("replayed TOTP code")
	case len(matched) == 0:
		return Session{}, a.fail("TOTP code matches no user")
	case len(matched) > 1:
		return Session{}, a.fail(fmt.Sprintf("TOTP code matches %d users", len(matched)))
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	a.c.Username = matched[0].Name
	cur, err := s.st.GetUser(ctx, a.c.Username)
	if errors.Is(err, store.ErrNotFound) || err == nil && cur.TOTPSecret != matched[0].TOTPSecret {
		return Session{}, a.fail("credentials changed during login")
	}
	if err != nil {
		return Session{}, fmt.Errorf("auth: check code: %w", err)
	}
	sess, err := s.admit(ctx, a, cur, steps[0], now)
	if err != nil {
		return Session{}, err
	}
	a.succeed()
	s.log.Info("auth: login by TOTP code", "user", a.c.Username, "addr", addr, "role", sess.Role)
	return sess, nil
}

// admit ends a login whose checks passed (s.mu held): u's TOTP step is
// taken — a step another login took meanwhile fails this one as a replay —
// and the session starts. A user without a TOTP secret has no step.
func (s *Service) admit(ctx context.Context, a *reservation, u store.UserRow, step int64, now time.Time) (Session, error) {
	if u.TOTPSecret != "" {
		if err := s.acceptStep(ctx, &u, step); err != nil {
			if errors.Is(err, ErrInvalidCredentials) {
				return Session{}, a.fail("replayed TOTP code")
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
