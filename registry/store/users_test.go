package store

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestUsers(t *testing.T) {
	clock := newFakeClock()
	s, _ := openTest(t, Options{})
	ctx := context.Background()
	alice := UserRow{Name: "alice", PasswordHash: "$argon2id$a", Role: "admin", TOTPSecret: "S1", Created: clock.Now()}
	bob := UserRow{Name: "bob", PasswordHash: "$argon2id$b", Role: "viewer", Created: clock.Now()}
	must(t, s.PutUser(ctx, bob))
	must(t, s.PutUser(ctx, alice))
	got, err := s.GetUser(ctx, "alice")
	must(t, err)
	if d := cmp.Diff(alice, got); d != "" {
		t.Errorf("GetUser (-want +got):\n%s", d)
	}
	// Update in place.
	alice.Role, alice.LastLogin = "operator", clock.Now().Add(time.Minute)
	must(t, s.PutUser(ctx, alice))
	list, err := s.ListUsers(ctx)
	must(t, err)
	if d := cmp.Diff([]UserRow{alice, bob}, list); d != "" {
		t.Errorf("ListUsers (-want +got):\n%s", d)
	}
	must(t, s.DeleteUser(ctx, "bob"))
	if _, err := s.GetUser(ctx, "bob"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetUser of a deleted user = %v, want ErrNotFound", err)
	}
	if err := s.DeleteUser(ctx, "bob"); !errors.Is(err, ErrNotFound) {
		t.Errorf("DeleteUser twice = %v, want ErrNotFound", err)
	}
	if err := s.PutUser(ctx, UserRow{Name: "x"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("PutUser without hash and role = %v, want ErrInvalid", err)
	}
}

func TestSetTOTPLastStep(t *testing.T) {
	s, _ := openTest(t, Options{})
	ctx := context.Background()
	must(t, s.PutUser(ctx, UserRow{Name: "u", PasswordHash: "h", Role: "admin", TOTPLastStep: 10}))
	steps := []struct {
		step int64
		want bool
	}{{9, false}, {10, false}, {11, true}, {11, false}, {20, true}, {15, false}}
	for _, tt := range steps {
		ok, err := s.SetTOTPLastStep(ctx, "u", tt.step)
		must(t, err)
		if ok != tt.want {
			t.Errorf("SetTOTPLastStep(%d) = %v, want %v", tt.step, ok, tt.want)
		}
	}
	u, err := s.GetUser(ctx, "u")
	must(t, err)
	if u.TOTPLastStep != 20 {
		t.Errorf("TOTPLastStep = %d, want 20", u.TOTPLastStep)
	}
	if _, err := s.SetTOTPLastStep(ctx, "nobody", 1); !errors.Is(err, ErrNotFound) {
		t.Errorf("SetTOTPLastStep for an unknown user = %v, want ErrNotFound", err)
	}
	// A code replayed concurrently is accepted exactly once.
	var accepted atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			ok, err := s.SetTOTPLastStep(ctx, "u", 21)
			if err != nil {
				t.Error(err)
			}
			if ok {
				accepted.Add(1)
			}
		})
	}
	wg.Wait()
	if accepted.Load() != 1 {
		t.Errorf("concurrent replay accepted %d times, want 1", accepted.Load())
	}
}

func TestSessions(t *testing.T) {
	clock := newFakeClock()
	s, _ := openTest(t, Options{})
	ctx := context.Background()
	now := clock.Now()
	must(t, s.PutUser(ctx, UserRow{Name: "u", PasswordHash: "h", Role: "admin"}))
	must(t, s.PutUser(ctx, UserRow{Name: "v", PasswordHash: "h", Role: "viewer"}))
	s1 := SessionRow{TokenHash: "h1", User: "u", Created: now, Expires: now.Add(time.Hour)}
	s2 := SessionRow{TokenHash: "h2", User: "u", Created: now, Expires: now.Add(-time.Second)}
	s3 := SessionRow{TokenHash: "h3", User: "v", Created: now, Expires: now.Add(time.Hour)}
	for _, r := range []SessionRow{s1, s2, s3} {
		must(t, s.PutSession(ctx, r))
	}
	got, err := s.GetSession(ctx, "h1")
	must(t, err)
	if d := cmp.Diff(s1, got); d != "" {
		t.Errorf("GetSession (-want +got):\n%s", d)
	}
	if err := s.PutSession(ctx, SessionRow{TokenHash: "h9", User: "ghost"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("PutSession for an unknown user = %v, want ErrNotFound", err)
	}
	if err := s.PutSession(ctx, SessionRow{User: "u"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("PutSession without token = %v, want ErrInvalid", err)
	}
	// Updating the user keeps their sessions.
	must(t, s.PutUser(ctx, UserRow{Name: "u", PasswordHash: "h2", Role: "admin"}))
	if _, err := s.GetSession(ctx, "h1"); err != nil {
		t.Errorf("session lost when its user was updated: %v", err)
	}
	must(t, s.RevokeSession(ctx, "h3"))
	if got, _ := s.GetSession(ctx, "h3"); !got.Revoked {
		t.Error("RevokeSession did not revoke")
	}
	if err := s.RevokeSession(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("RevokeSession unknown = %v, want ErrNotFound", err)
	}
	n, err := s.RevokeUserSessions(ctx, "u")
	must(t, err)
	if n != 2 {
		t.Errorf("RevokeUserSessions = %d, want 2", n)
	}
	n, err = s.DeleteExpiredSessions(ctx, now)
	must(t, err)
	if n != 1 {
		t.Errorf("DeleteExpiredSessions = %d, want 1", n)
	}
	if _, err := s.GetSession(ctx, "h2"); !errors.Is(err, ErrNotFound) {
		t.Errorf("expired session still there: %v", err)
	}
	// Deleting a user deletes their sessions.
	must(t, s.DeleteUser(ctx, "v"))
	if _, err := s.GetSession(ctx, "h3"); !errors.Is(err, ErrNotFound) {
		t.Errorf("session of a deleted user = %v, want ErrNotFound", err)
	}
}
