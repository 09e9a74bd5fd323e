package auth

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// login logs alice in with the current code and returns the session.
func (f *fixture) login(t *testing.T, user, pass, secret string) Session {
	t.Helper()
	sess, err := f.svc.Login(context.Background(), Credentials{Username: user, Password: pass, TOTP: codeAt(t, secret, f.clock.Now()), Addr: "192.0.2.1"})
	if err != nil {
		t.Fatalf("login %s: %v", user, err)
	}
	return sess
}

func TestSessionInvalidation(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		// invalidate acts on the session of alice (secret given) and returns
		// the token to check.
		invalidate func(t *testing.T, f *fixture, s Session) string
	}{
		{"expired", func(t *testing.T, f *fixture, s Session) string {
			f.clock.Advance(DefaultSessionTTL)
			return s.Token
		}},
		{"logged out", func(t *testing.T, f *fixture, s Session) string {
			if err := f.svc.Logout(ctx, s.Token); err != nil {
				t.Fatal(err)
			}
			return s.Token
		}},
		{"password changed", func(t *testing.T, f *fixture, s Session) string {
			if err := f.svc.SetPassword(ctx, "alice", "a brand new password"); err != nil {
				t.Fatal(err)
			}
			return s.Token
		}},
		{"TOTP reset", func(t *testing.T, f *fixture, s Session) string {
			if _, err := f.svc.ResetTOTP(ctx, "alice"); err != nil {
				t.Fatal(err)
			}
			return s.Token
		}},
		{"user removed", func(t *testing.T, f *fixture, s Session) string {
			if err := f.svc.RemoveUser(ctx, "alice"); err != nil {
				t.Fatal(err)
			}
			return s.Token
		}},
		{"unknown token", func(t *testing.T, f *fixture, s Session) string {
			return strings.Repeat("ab", 32)
		}},
		{"malformed token", func(t *testing.T, f *fixture, s Session) string {
			return strings.ToUpper(s.Token)
		}},
		{"empty token", func(t *testing.T, f *fixture, s Session) string { return "" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			secret := f.addUser(t, "alice", alicePass, Operator)
			bobSecret := f.addUser(t, "bob", bobPass, Viewer)
			sess := f.login(t, "alice", alicePass, secret)
			bob := f.login(t, "bob", bobPass, bobSecret)
			// Both sessions are in use (cached) before the change.
			for _, tok := range []string{sess.Token, bob.Token} {
				if _, err := f.svc.Session(ctx, tok); err != nil {
					t.Fatalf("Session before %s: %v", tt.name, err)
				}
			}
			token := tt.invalidate(t, f, sess)
			if _, err := f.svc.Session(ctx, token); !errors.Is(err, ErrInvalidToken) {
				t.Fatalf("Session after %s: %v, want ErrInvalidToken", tt.name, err)
			}
			if tt.name == "expired" {
				return
			}
			if _, err := f.svc.Session(ctx, bob.Token); err != nil {
				t.Fatalf("bob's session after %s: %v", tt.name, err)
			}
		})
	}
}

// TestSessionJustBeforeExpiry: a session is valid until its Expires
// instant, exclusive.
func TestSessionJustBeforeExpiry(t *testing.T) {
	f := newFixture(t)
	sess := f.login(t, "alice", alicePass, f.addUser(t, "alice", alicePass, Operator))
	f.clock.Advance(DefaultSessionTTL - time.Nanosecond)
	if _, err := f.svc.Session(context.Background(), sess.Token); err != nil {
		t.Fatalf("1ns before expiry: %v", err)
	}
}

func TestLogoutUnknownToken(t *testing.T) {
	f := newFixture(t)
	for _, tok := range []string{"", "xyz", strings.Repeat("0", 64)} {
		if err := f.svc.Logout(context.Background(), tok); !errors.Is(err, ErrInvalidToken) {
			t.Errorf("Logout(%q) = %v, want ErrInvalidToken", tok, err)
		}
	}
}

// TestSessionRoleFollowsUser: a role change applies to live sessions.
func TestSessionRoleFollowsUser(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	sess := f.login(t, "alice", alicePass, f.addUser(t, "alice", alicePass, Viewer))
	if got, err := f.svc.Session(ctx, sess.Token); err != nil || got.Role != Viewer { // cached as a viewer
		t.Fatalf("Session = %+v, %v; want role viewer", got, err)
	}
	if err := f.svc.SetRole(ctx, "alice", Admin); err != nil {
		t.Fatal(err)
	}
	got, err := f.svc.Session(ctx, sess.Token)
	if err != nil || got.Role != Admin {
		t.Fatalf("Session after SetRole = %+v, %v; want role admin", got, err)
	}
}

// TestSessionsSurviveReopen: sessions and the replay guard are in the store.
func TestSessionsSurviveReopen(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	secret := f.addUser(t, "alice", alicePass, Operator)
	code := codeAt(t, secret, f.clock.Now())
	sess, err := f.svc.Login(ctx, Credentials{Username: "alice", Password: alicePass, TOTP: code})
	if err != nil {
		t.Fatal(err)
	}
	f.close(t)
	f.open(t)
	got, err := f.svc.Session(ctx, sess.Token)
	if err != nil || got.Username != "alice" || !got.Expires.Equal(sess.Expires) {
		t.Fatalf("Session after reopen = %+v, %v; want %+v", got, err, sess)
	}
	if _, err := f.svc.Login(ctx, Credentials{Username: "alice", Password: alicePass, TOTP: code}); !errors.Is(err, ErrInvalidCredentials) {
		t.Fatalf("code replayed after reopen: %v, want ErrInvalidCredentials", err)
	}
}

// TestSweep: expired sessions are deleted from the store; live ones stay.
func TestSweep(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	secret := f.addUser(t, "alice", alicePass, Operator)
	old := f.login(t, "alice", alicePass, secret)
	f.clock.Advance(DefaultSessionTTL / 2)
	live := f.login(t, "alice", alicePass, secret)
	f.clock.Advance(DefaultSessionTTL/2 + time.Second)
	if err := f.svc.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.GetSession(ctx, tokenHash(old.Token)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("expired session still stored: %v", err)
	}
	if _, err := f.svc.Session(ctx, live.Token); err != nil {
		t.Errorf("live session after sweep: %v", err)
	}
}

// TestTokenStoredHashed: the store holds the SHA-256 of the token, never the
// token.
func TestTokenStoredHashed(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	sess := f.login(t, "alice", alicePass, f.addUser(t, "alice", alicePass, Operator))
	if !wellFormedToken(sess.Token) {
		t.Fatalf("token %q is not 64 lower-case hex", sess.Token)
	}
	if _, err := f.st.GetSession(ctx, sess.Token); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the raw token is a session key: %v", err)
	}
	row, err := f.st.GetSession(ctx, tokenHash(sess.Token))
	if err != nil || row.User != "alice" || row.Revoked {
		t.Fatalf("stored session = %+v, %v", row, err)
	}
}

// TestSessionCache: a session in use is answered from memory (a change made
// behind the Service's back shows only after sessionCacheTTL), never past
// its expiry, and Sweep forgets what is stale.
func TestSessionCache(t *testing.T) {
	ctx := context.Background()
	t.Run("reused until the cache TTL", func(t *testing.T) {
		f := newFixture(t)
		sess := f.login(t, "alice", alicePass, f.addUser(t, "alice", alicePass, Operator))
		if _, err := f.svc.Session(ctx, sess.Token); err != nil {
			t.Fatal(err)
		}
		// Not through the Service: only the store knows.
		if err := f.st.RevokeSession(ctx, tokenHash(sess.Token)); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(sessionCacheTTL - time.Nanosecond)
		if got, err := f.svc.Session(ctx, sess.Token); err != nil || got.Username != "alice" || got.Role != Operator {
			t.Fatalf("cached session = %+v, %v; want alice's, from memory", got, err)
		}
		f.clock.Advance(time.Nanosecond)
		if _, err := f.svc.Session(ctx, sess.Token); !errors.Is(err, ErrInvalidToken) {
			t.Fatalf("after the cache TTL: %v, want ErrInvalidToken (read again: revoked)", err)
		}
	})
	t.Run("expires in the cache", func(t *testing.T) {
		f := newFixture(t)
		sess := f.login(t, "alice", alicePass, f.addUser(t, "alice", alicePass, Operator))
		f.clock.Advance(DefaultSessionTTL - 10*time.Second)
		if _, err := f.svc.Session(ctx, sess.Token); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(10 * time.Second) // within the cache TTL, at Expires
		if _, err := f.svc.Session(ctx, sess.Token); !errors.Is(err, ErrInvalidToken) ||
			!strings.Contains(err.Error(), "expired") {
			t.Fatalf("at expiry: %v, want ErrInvalidToken (expired)", err)
		}
	})
	t.Run("sweep forgets stale entries", func(t *testing.T) {
		f := newFixture(t)
		sess := f.login(t, "alice", alicePass, f.addUser(t, "alice", alicePass, Operator))
		if _, err := f.svc.Session(ctx, sess.Token); err != nil {
			t.Fatal(err)
		}
		if err := f.svc.Sweep(ctx); err != nil {
			t.Fatal(err)
		}
		if n := f.svc.sessions.prune(f.clock.Now()); n != 0 {
			t.Fatalf("fresh entry pruned: %d", n)
		}
		f.clock.Advance(sessionCacheTTL)
		if err := f.svc.Sweep(ctx); err != nil {
			t.Fatal(err)
		}
		f.svc.sessions.mu.Lock()
		n := len(f.svc.sessions.m)
		f.svc.sessions.mu.Unlock()
		if n != 0 {
			t.Fatalf("%d entries after a sweep past the cache TTL, want 0", n)
		}
	})
}

// TestSessionLogoutRace: a store read racing a logout is not cached, so
// once Logout returns the token is refused however busy it is.
func TestSessionLogoutRace(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	secret := f.addUser(t, "alice", alicePass, Operator)
	for round := range 5 {
		sess := f.login(t, "alice", alicePass, secret)
		f.clock.Advance(30 * time.Second) // the next TOTP step
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					_, _ = f.svc.Session(ctx, sess.Token)
				}
			})
		}
		if err := f.svc.Logout(ctx, sess.Token); err != nil {
			t.Fatal(err)
		}
		for range 50 {
			if _, err := f.svc.Session(ctx, sess.Token); !errors.Is(err, ErrInvalidToken) {
				close(stop)
				wg.Wait()
				t.Fatalf("round %d: Session after Logout: %v, want ErrInvalidToken", round, err)
			}
		}
		close(stop)
		wg.Wait()
	}
}

// BenchmarkSession compares a session answered from memory with one read
// from the store (the session row and the user row), what every REST
// request cost before the cache.
func BenchmarkSession(b *testing.B) {
	ctx := context.Background()
	st, err := store.Open(b.TempDir(), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	svc, err := New(st, Options{Argon2: cheap, Organism: "bench", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := svc.AddUser(ctx, "alice", alicePass, Operator); err != nil {
		b.Fatal(err)
	}
	u, err := st.GetUser(ctx, "alice")
	if err != nil {
		b.Fatal(err)
	}
	sess, err := svc.startSession(ctx, u, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	hash := tokenHash(sess.Token)
	for _, cached := range []bool{true, false} {
		b.Run(map[bool]string{true: "cached", false: "store"}[cached], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !cached {
					svc.sessions.drop(hash)
				}
				if _, err := svc.Session(ctx, sess.Token); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
