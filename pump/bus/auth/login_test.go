package auth

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const (
	alicePass = "correct horse battery"
	bobPass   = "tr0ub4dor&3-bob"
)

// attempt is one Login in a scenario: the code is generated for codeOffset
// from the current fake time (badCode sends a wrong one, noCode none), after
// advancing the clock by advance.
type attempt struct {
	advance    time.Duration
	user, pass string
	codeOffset time.Duration
	badCode    bool
	noCode     bool
	// codeFrom reuses the code of an earlier attempt (index) instead.
	codeFrom int
	addr     string
	want     error
}

func TestLogin(t *testing.T) {
	const addr = "192.0.2.1"
	ok := func(a attempt) attempt { a.codeFrom = -1; return a }
	tests := []struct {
		name     string
		attempts []attempt
	}{
		{"correct login", []attempt{
			ok(attempt{user: "alice", pass: alicePass, addr: addr}),
		}},
		{"same code replayed", []attempt{
			ok(attempt{user: "alice", pass: alicePass, addr: addr}),
			{user: "alice", pass: alicePass, codeFrom: 0, addr: addr, want: ErrInvalidCredentials},
		}},
		{"replay rejected from another address too", []attempt{
			ok(attempt{user: "alice", pass: alicePass, addr: addr}),
			{user: "alice", pass: alicePass, codeFrom: 0, addr: "192.0.2.99", want: ErrInvalidCredentials},
		}},
		{"previous step within skew accepted once", []attempt{
			ok(attempt{user: "alice", pass: alicePass, codeOffset: -30 * time.Second, addr: addr}),
			{user: "alice", pass: alicePass, codeFrom: 0, addr: addr, want: ErrInvalidCredentials},
		}},
		{"next step accepted, then the current one is older", []attempt{
			ok(attempt{user: "alice", pass: alicePass, codeOffset: 30 * time.Second, addr: addr}),
			ok(attempt{user: "alice", pass: alicePass, addr: addr, want: ErrInvalidCredentials}),
		}},
		{"two steps old rejected", []attempt{
			ok(attempt{user: "alice", pass: alicePass, codeOffset: -60 * time.Second, addr: addr, want: ErrInvalidCredentials}),
		}},
		{"new step after the replay window", []attempt{
			ok(attempt{user: "alice", pass: alicePass, addr: addr}),
			ok(attempt{advance: 30 * time.Second, user: "alice", pass: alicePass, addr: addr}),
		}},
		{"wrong password", []attempt{
			ok(attempt{user: "alice", pass: "not-alices-password", addr: addr, want: ErrInvalidCredentials}),
		}},
		{"wrong code", []attempt{
			ok(attempt{user: "alice", pass: alicePass, badCode: true, addr: addr, want: ErrInvalidCredentials}),
		}},
		{"missing code", []attempt{
			ok(attempt{user: "alice", pass: alicePass, noCode: true, addr: addr, want: ErrInvalidCredentials}),
		}},
		{"unknown user", []attempt{
			ok(attempt{user: "mallory", pass: alicePass, addr: addr, want: ErrInvalidCredentials}),
		}},
		{"user locked out from one address after MaxFailures until Lockout passes", []attempt{
			ok(attempt{user: "alice", pass: "nope-1", addr: "198.51.100.1", want: ErrInvalidCredentials}),
			ok(attempt{user: "alice", pass: "nope-2", addr: "198.51.100.1", want: ErrInvalidCredentials}),
			ok(attempt{user: "alice", pass: "nope-3", addr: "198.51.100.1", want: ErrInvalidCredentials}),
			ok(attempt{user: "alice", pass: "nope-4", addr: "198.51.100.1", want: ErrInvalidCredentials}),
			ok(attempt{user: "alice", pass: "nope-5", addr: "198.51.100.1", want: ErrInvalidCredentials}),
			ok(attempt{user: "alice", pass: alicePass, addr: "198.51.100.1", want: ErrRateLimited}),
			ok(attempt{user: "alice", pass: alicePass, addr: "198.51.100.2"}),
			ok(attempt{user: "bob", pass: bobPass, addr: "198.51.100.1", want: ErrRateLimited}),
			ok(attempt{advance: 59 * time.Second, user: "alice", pass: alicePass, addr: "198.51.100.1", want: ErrRateLimited}),
			ok(attempt{advance: time.Second, user: "alice", pass: alicePass, addr: "198.51.100.1"}),
		}},
		{"failures spread over addresses do not lock the user out", []attempt{
			ok(attempt{user: "alice", pass: "nope-1", addr: "198.51.100.1", want: ErrInvalidCredentials}),
			ok(attempt{user: "alice", pass: "nope-2", addr: "198.51.100.2", want: ErrInvalidCredentials}),
			ok(attempt{user: "alice", pass: "nope-3", addr: "198.51.100.3", want: ErrInvalidCredentials}),
			ok(attempt{user: "alice", pass: "nope-4", addr: "198.51.100.4", want: ErrInvalidCredentials}),
			ok(attempt{user: "alice", pass: "nope-5", addr: "198.51.100.5", want: ErrInvalidCredentials}),
			ok(attempt{user: "alice", pass: "nope-6", addr: "198.51.100.6", want: ErrInvalidCredentials}),
			ok(attempt{user: "alice", pass: alicePass, addr: "198.51.100.7"}),
		}},
		{"IPv6 addresses count per /64", []attempt{
			ok(attempt{user: "alice", pass: "nope-1", addr: "2001:db8:1:2::1", want: ErrInvalidCredentials}),
			ok(attempt{user: "alice", pass: "nope-2", addr: "2001:db8:1:2::2", want: ErrInvalidCredentials}),
			ok(attempt{user: "alice", pass: "nope-3", addr: "2001:db8:1:2::3", want: ErrInvalidCredentials}),
			ok(attempt{user: "alice", pass: "nope-4", addr: "2001:db8:1:2::4", want: ErrInvalidCredentials}),
			ok(attempt{user: "alice", pass: "nope-5", addr: "2001:db8:1:2::5", want: ErrInvalidCredentials}),
			ok(attempt{user: "alice", pass: alicePass, addr: "2001:db8:1:2:ffff::6", want: ErrRateLimited}),
			ok(attempt{user: "alice", pass: alicePass, addr: "2001:db8:1:3::1"}),
		}},
		{"consecutive lockouts double", []attempt{
			ok(attempt{user: "alice", pass: "nope-1", addr: addr, want: ErrInvalidCredentials}),
			ok(attempt{user: "alice", pass: "nope-2", addr: addr, want: ErrInvalidCredentials}),
			ok(attempt{user: "alice", pass: "nope-3", addr: addr, want: ErrInvalidCredentials}),
			ok(attempt{user: "alice", pass: "nope-4", addr: addr, want: ErrInvalidCredentials}),
			ok(attempt{user: "alice", pass: "nope-5", addr: addr, want: ErrInvalidCredentials}),
			ok(attempt{advance: time.Minute, user: "alice", pass: "nope-6", addr: addr, want: ErrInvalidCredentials}),
			ok(attempt{user: "alice", pass: "nope-7", addr: addr, want: ErrInvalidCredentials}),
			ok(attempt{user: "alice", pass: "nope-8", addr: addr, want: ErrInvalidCredentials}),
			ok(attempt{user: "alice", pass: "nope-9", addr: addr, want: ErrInvalidCredentials}),
			ok(attempt{user: "alice", pass: "nope-10", addr: addr, want: ErrInvalidCredentials}),
			ok(attempt{advance: 119 * time.Second, user: "alice", pass: alicePass, addr: addr, want: ErrRateLimited}),
			ok(attempt{advance: time.Second, user: "alice", pass: alicePass, addr: addr}),
		}},
		{"failures outside the window do not add up", []attempt{
			ok(attempt{user: "alice", pass: "nope-1", addr: addr, want: ErrInvalidCredentials}),
			ok(attempt{user: "alice", pass: "nope-2", addr: addr, want: ErrInvalidCredentials}),
			ok(attempt{user: "alice", pass: "nope-3", addr: addr, want: ErrInvalidCredentials}),
			ok(attempt{user: "alice", pass: "nope-4", addr: addr, want: ErrInvalidCredentials}),
			ok(attempt{advance: 61 * time.Second, user: "alice", pass: "nope-5", addr: addr, want: ErrInvalidCredentials}),
			ok(attempt{user: "alice", pass: alicePass, addr: addr}),
		}},
		{"success forgives the pair, not the address", []attempt{
			ok(attempt{user: "alice", pass: "nope-1", addr: addr, want: ErrInvalidCredentials}),
			ok(attempt{user: "alice", pass: "nope-2", addr: addr, want: ErrInvalidCredentials}),
			ok(attempt{user: "alice", pass: "nope-3", addr: addr, want: ErrInvalidCredentials}),
			ok(attempt{user: "alice", pass: "nope-4", addr: addr, want: ErrInvalidCredentials}),
			ok(attempt{user: "alice", pass: alicePass, addr: addr}),
			ok(attempt{user: "bob", pass: "nope-5", addr: addr, want: ErrInvalidCredentials}),
			ok(attempt{advance: 30 * time.Second, user: "alice", pass: alicePass, addr: addr, want: ErrRateLimited}),
			ok(attempt{user: "alice", pass: alicePass, addr: "192.0.2.2"}),
		}},
		{"per-address limit across user names", []attempt{
			ok(attempt{user: "alice", pass: "nope", addr: addr, want: ErrInvalidCredentials}),
			ok(attempt{user: "bob", pass: "nope", addr: addr, want: ErrInvalidCredentials}),
			ok(attempt{user: "carol", pass: "nope", addr: addr, want: ErrInvalidCredentials}),
			ok(attempt{user: "dave", pass: "nope", addr: addr, want: ErrInvalidCredentials}),
			ok(attempt{user: "erin", pass: "nope", addr: addr, want: ErrInvalidCredentials}),
			ok(attempt{user: "bob", pass: bobPass, addr: addr, want: ErrRateLimited}),
			ok(attempt{user: "bob", pass: bobPass, addr: "192.0.2.2"}),
			ok(attempt{advance: time.Minute, user: "alice", pass: alicePass, addr: addr}),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			secrets := map[string]string{
				"alice": f.addUser(t, "alice", alicePass, Operator),
				"bob":   f.addUser(t, "bob", bobPass, Viewer),
			}
			codes := make([]string, len(tt.attempts))
			for i, a := range tt.attempts {
				f.clock.Advance(a.advance)
				now := f.clock.Now()
				switch {
				case a.noCode:
				case a.badCode:
					codes[i] = "000000"
					if codeAt(t, secrets["alice"], now) == codes[i] {
						codes[i] = "000001"
					}
				case a.codeFrom >= 0 && i > 0:
					codes[i] = codes[a.codeFrom]
				case secrets[a.user] != "":
					codes[i] = codeAt(t, secrets[a.user], now.Add(a.codeOffset))
				default:
					codes[i] = "123456"
				}
				sess, err := f.svc.Login(ctx, Credentials{Username: a.user, Password: a.pass, TOTP: codes[i], Addr: a.addr})
				if !errors.Is(err, a.want) || (a.want != nil) != (err != nil) {
					t.Fatalf("attempt %d (%s at %s): err = %v, want %v", i, a.user, now.Format(time.TimeOnly), err, a.want)
				}
				if err != nil {
					continue
				}
				if sess.Username != a.user || len(sess.Token) != 64 || !sess.Expires.Equal(now.Add(DefaultSessionTTL)) {
					t.Fatalf("attempt %d: session = %+v", i, sess)
				}
				got, err := f.svc.Session(ctx, sess.Token)
				if err != nil {
					t.Fatalf("attempt %d: Session(token): %v", i, err)
				}
				if diff := cmp.Diff(sess, got); diff != "" {
					t.Fatalf("attempt %d: Session(token) differs from the login's (-login +got):\n%s", i, diff)
				}
			}
			logs := f.log.String()
			for i, a := range tt.attempts {
				if strings.Contains(logs, a.pass) || codes[i] != "" && strings.Contains(logs, codes[i]) {
					t.Errorf("log holds the password or code of attempt %d:\n%s", i, logs)
				}
			}
		})
	}
}

// TestLoginRecordsLastLoginAndRole: a login stamps LastLogin and the session
// carries the user's role.
func TestLoginRecordsLastLoginAndRole(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	secret := f.addUser(t, "alice", alicePass, Admin)
	f.clock.Advance(time.Hour)
	sess, err := f.svc.Login(ctx, Credentials{Username: "alice", Password: alicePass, TOTP: codeAt(t, secret, f.clock.Now())})
	if err != nil {
		t.Fatal(err)
	}
	if sess.Role != Admin {
		t.Errorf("role = %q, want admin", sess.Role)
	}
	users, err := f.svc.Users(ctx)
	if err != nil || len(users) != 1 {
		t.Fatalf("Users = %v, %v", users, err)
	}
	if want := t0.Add(time.Hour); !users[0].LastLogin.Equal(want) || !users[0].Created.Equal(t0) {
		t.Errorf("created %v, last login %v; want %v, %v", users[0].Created, users[0].LastLogin, t0, want)
	}
}

// TestConcurrentReplay: the same valid code sent by many clients at once
// logs in exactly once. The replays are refused as invalid credentials, or,
// once MaxFailures of them have been counted, as rate limited.
func TestConcurrentReplay(t *testing.T) {
	f := newFixture(t)
	secret := f.addUser(t, "alice", alicePass, Operator)
	code := codeAt(t, secret, f.clock.Now())
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, errs[i] = f.svc.Login(context.Background(), Credentials{Username: "alice", Password: alicePass, TOTP: code, Addr: "192.0.2.1"})
		})
	}
	wg.Wait()
	okCount := 0
	for _, err := range errs {
		switch {
		case err == nil:
			okCount++
		case !errors.Is(err, ErrInvalidCredentials) && !errors.Is(err, ErrRateLimited):
			t.Errorf("unexpected error %v", err)
		}
	}
	if okCount != 1 {
		t.Fatalf("%d logins succeeded with one code, want 1 (%v)", okCount, errs)
	}
}

// TestLoginCancelledContext: a login waiting for a hash slot gives up when
// its context ends.
func TestLoginCancelledContext(t *testing.T) {
	f := newFixture(t)
	f.addUser(t, "alice", alicePass, Operator)
	// Fill every hash slot so the login has to wait, then cancel it.
	for range cap(f.svc.hashes.slots) {
		f.svc.hashes.slots <- struct{}{}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range maxFailures(f) {
		if _, err := f.svc.Login(ctx, Credentials{Username: "alice", Password: "wrong password", Addr: "192.0.2.1"}); !errors.Is(err, context.Canceled) {
			t.Fatalf("Login with busy hash slots and a cancelled context: %v", err)
		}
	}
	// The abandoned logins were never verified: they counted nowhere.
	for range cap(f.svc.hashes.slots) {
		<-f.svc.hashes.slots
	}
	for i := range maxFailures(f) {
		_, err := f.svc.Login(context.Background(), Credentials{Username: "alice", Password: "wrong password", Addr: "192.0.2.1"})
		if !errors.Is(err, ErrInvalidCredentials) {
			t.Fatalf("failure %d after the abandoned logins: %v", i+1, err)
		}
	}
}

// maxFailures is the fixture's failure budget.
func maxFailures(f *fixture) int { return f.svc.opts.MaxFailures }

func TestCheckCode(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	secrets := map[string]string{
		"alice": f.addUser(t, "alice", alicePass, Operator),
		"bob":   f.addUser(t, "bob", bobPass, Viewer),
	}
	now := f.clock.Now()
	aliceCode, bobCode := codeAt(t, secrets["alice"], now), codeAt(t, secrets["bob"], now)
	if aliceCode == bobCode {
		t.Skip("both users' codes collide at t0")
	}
	steps := []struct {
		name, code, addr string
		wantUser         string
		want             error
	}{
		{"bob's code", bobCode, "192.0.2.1", "bob", nil},
		{"bob's code replayed", bobCode, "192.0.2.1", "", ErrInvalidCredentials},
		{"alice's code", aliceCode, "192.0.2.2", "alice", nil},
		{"malformed", "12345", "192.0.2.1", "", ErrInvalidCredentials},
		{"letters", "abcdef", "192.0.2.1", "", ErrInvalidCredentials},
		{"seven digits", "1234567", "192.0.2.1", "", ErrInvalidCredentials},
		{"no user's code", "", "192.0.2.1", "", ErrInvalidCredentials},
		{"address now locked out", codeAt(t, secrets["bob"], now.Add(30*time.Second)), "192.0.2.1", "", ErrRateLimited},
		{"other address still fine", codeAt(t, secrets["bob"], now.Add(30*time.Second)), "192.0.2.3", "bob", nil},
	}
	for _, s := range steps {
		code := s.code
		if s.name == "no user's code" {
			code = unusedCode(t, secrets, now)
		}
		sess, err := f.svc.CheckCode(ctx, code, s.addr)
		if !errors.Is(err, s.want) || (s.want != nil) != (err != nil) {
			t.Fatalf("%s: err = %v, want %v", s.name, err, s.want)
		}
		if err == nil && sess.Username != s.wantUser {
			t.Fatalf("%s: session of %q, want %q", s.name, sess.Username, s.wantUser)
		}
	}
}

// unusedCode is a six-digit code no secret produces around now.
func unusedCode(t *testing.T, secrets map[string]string, now time.Time) string {
	t.Helper()
	used := map[string]bool{}
	for _, s := range secrets {
		for d := -60 * time.Second; d <= 60*time.Second; d += 30 * time.Second {
			used[codeAt(t, s, now.Add(d))] = true
		}
	}
	for _, c := range []string{"000000", "111111", "222222", "333333"} {
		if !used[c] {
			return c
		}
	}
	t.Fatal("no unused code")
	return ""
}

// TestCheckCodeAmbiguous: a code that matches two users' secrets logs in
// neither.
func TestCheckCodeAmbiguous(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	secret := f.addUser(t, "alice", alicePass, Operator)
	f.addUser(t, "bob", bobPass, Admin)
	bob, err := f.st.GetUser(ctx, "bob")
	if err != nil {
		t.Fatal(err)
	}
	bob.TOTPSecret = secret
	if err := f.st.PutUser(ctx, bob); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.CheckCode(ctx, codeAt(t, secret, f.clock.Now()), "192.0.2.1"); !errors.Is(err, ErrInvalidCredentials) {
		t.Fatalf("ambiguous code: %v, want ErrInvalidCredentials", err)
	}
	if !strings.Contains(f.log.String(), "matches 2 users") {
		t.Errorf("ambiguity not logged:\n%s", f.log.String())
	}
}

// TestLoginWithoutTOTP: a user stored without a secret (TOTP off; this
// package never creates one) logs in with the password alone.
func TestLoginWithoutTOTP(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.addUser(t, "alice", alicePass, Operator)
	u, err := f.st.GetUser(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	u.TOTPSecret = ""
	if err := f.st.PutUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Login(ctx, Credentials{Username: "alice", Password: alicePass}); err != nil {
		t.Fatalf("password-only login: %v", err)
	}
	if _, err := f.svc.Login(ctx, Credentials{Username: "alice", Password: "not-alices-password"}); !errors.Is(err, ErrInvalidCredentials) {
		t.Fatalf("wrong password without TOTP: %v", err)
	}
	if _, err := f.svc.CheckCode(ctx, "123456", "192.0.2.1"); !errors.Is(err, ErrInvalidCredentials) {
		t.Fatalf("CheckCode with no secrets: %v", err)
	}
}
