package bus

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

func TestLogin(t *testing.T) {
	f := newFixture(t)
	secret := f.user("alice", auth.Operator)
	f.nextStep()
	good := f.code(secret)

	steps := []struct {
		name       string
		body       any
		wantStatus int
		wantError  string
	}{
		{"invalid JSON", "{", http.StatusBadRequest, "Invalid JSON"},
		{"missing password", map[string]string{"username": "alice"}, http.StatusBadRequest, "Credentials required"},
		{"missing username", map[string]string{"password": password}, http.StatusBadRequest, "Credentials required"},
		{"correct TOTP", map[string]string{"username": "alice", "password": password, "totp": good}, http.StatusOK, ""},
		{"same code replayed", map[string]string{"username": "alice", "password": password, "totp": good},
			http.StatusUnauthorized, "Invalid credentials"},
	}
	for _, s := range steps {
		status, body, _ := f.do("POST", "/auth/login", "", s.body)
		if status != s.wantStatus {
			t.Fatalf("%s: status %d, want %d (%v)", s.name, status, s.wantStatus, body)
		}
		if s.wantError != "" {
			if diff := cmp.Diff(map[string]any{"error": s.wantError}, body); diff != "" {
				t.Errorf("%s: body (-want +got):\n%s", s.name, diff)
			}
			continue
		}
		token, _ := body["token"].(string)
		if len(token) != 64 || body["username"] != "alice" || body["role"] != "operator" {
			t.Errorf("%s: body %v", s.name, body)
		}
		exp, err := time.Parse(time.RFC3339, body["expires_at"].(string))
		if err != nil || !exp.Equal(f.clock.Now().Add(auth.DefaultSessionTTL).Truncate(time.Second)) {
			t.Errorf("%s: expires_at %v (%v)", s.name, body["expires_at"], err)
		}
	}
}

func TestLoginRateLimited(t *testing.T) {
	f := newFixture(t)
	secret := f.user("bob", auth.Viewer)
	wrong := map[string]string{"username": "bob", "password": "not the password", "totp": "000000"}
	for i := range 3 {
		status, body, _ := f.do("POST", "/auth/login", "", wrong)
		if status != http.StatusUnauthorized || body["error"] != "Invalid credentials" {
			t.Fatalf("attempt %d: %d %v", i+1, status, body)
		}
	}
	f.nextStep()
	right := map[string]string{"username": "bob", "password": password, "totp": f.code(secret)}
	status, body, header := f.do("POST", "/auth/login", "", right)
	if status != http.StatusTooManyRequests || body["error"] != "Too many failed login attempts" {
		t.Fatalf("after 3 failures: %d %v", status, body)
	}
	if header.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
	f.clock.Advance(auth.DefaultLockout + time.Second)
	right["totp"] = f.code(secret)
	if status, body, _ := f.do("POST", "/auth/login", "", right); status != http.StatusOK {
		t.Fatalf("after the lockout: %d %v", status, body)
	}
}

// TestLoginWithoutTOTP: a reference-style body without a code is a 400
// that is not counted as a failed login: five of them, with the right or
// a wrong password, then a correct login succeeds.
func TestLoginWithoutTOTP(t *testing.T) {
	f := newFixture(t)
	secret := f.user("dora", auth.Operator)
	for i, pass := range []string{password, "wrong", password, "wrong", password} {
		status, body, _ := f.do("POST", "/auth/login", "", map[string]string{"username": "dora", "password": pass})
		if diff := cmp.Diff(map[string]any{"error": "TOTP code required"}, body); status != http.StatusBadRequest || diff != "" {
			t.Fatalf("body %d without totp: %d (-want +got):\n%s", i+1, status, diff)
		}
	}
	if status, body, _ := f.do("POST", "/auth/login", "", map[string]string{"username": "dora", "password": password,
		"totp": " "}); status != http.StatusBadRequest || body["error"] != "TOTP code required" {
		t.Fatalf("blank totp: %d %v", status, body)
	}
	f.nextStep()
	status, body, _ := f.do("POST", "/auth/login", "", map[string]string{"username": "dora", "password": password,
		"totp": f.code(secret)})
	if status != http.StatusOK || body["username"] != "dora" {
		t.Fatalf("correct login after bodies without totp: %d %v", status, body)
	}
}

func TestTokens(t *testing.T) {
	f := newFixture(t)
	secret := f.user("carol", auth.Admin)
	token := f.login("carol", secret)

	if status, body, _ := f.do("GET", "/health", "", nil); status != http.StatusOK || body["status"] != "ok" {
		t.Errorf("health: %d %v", status, body)
	}
	status, body, _ := f.do("GET", "/auth/me", token, nil)
	if status != http.StatusOK || body["username"] != "carol" || body["role"] != "admin" || body["token"] != nil {
		t.Errorf("me: %d %v", status, body)
	}
	for _, c := range []struct {
		name, path, token, want string
	}{
		{"no header", "/auth/me", "", "Missing Authorization"},
		{"unknown token", "/auth/me", "00" + token[2:], "Invalid token"},
		{"unknown path without a token", "/nowhere", "", "Missing Authorization"},
	} {
		status, body, _ := f.do("GET", c.path, c.token, nil)
		if status != http.StatusUnauthorized || body["error"] != c.want {
			t.Errorf("%s: %d %v, want 401 %q", c.name, status, body, c.want)
		}
	}
	if status, body, _ := f.do("GET", "/nowhere", token, nil); status != http.StatusNotFound || body["error"] != "Not Found" {
		t.Errorf("unknown path: %d %v", status, body)
	}
	if status, body, _ := f.do("GET", "/auth/logout", token, nil); status != http.StatusMethodNotAllowed {
		t.Errorf("GET logout: %d %v", status, body)
	}

	// Revoked by logout.
	if status, body, _ := f.do("POST", "/auth/logout", token, nil); status != http.StatusOK || body["message"] != "Logged out" {
		t.Fatalf("logout: %d %v", status, body)
	}
	if status, body, _ := f.do("GET", "/auth/me", token, nil); status != http.StatusUnauthorized || body["error"] != "Invalid token" {
		t.Errorf("revoked token: %d %v", status, body)
	}
	if _, resp, err := f.tryDial("/ws", http.Header{"Authorization": {"Bearer " + token}}, true); err == nil ||
		resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("WebSocket with a revoked token: %v", err)
	}

	// Expired.
	token = f.login("carol", secret)
	f.clock.Advance(auth.DefaultSessionTTL + time.Second)
	if status, body, _ := f.do("GET", "/auth/me", token, nil); status != http.StatusUnauthorized || body["error"] != "Invalid token" {
		t.Errorf("expired token: %d %v", status, body)
	}
}

// TestLoginLoggedOnce: a successful login is one log record, not one from
// the auth service and another from the HTTP handler.
func TestLoginLoggedOnce(t *testing.T) {
	f := newFixture(t)
	secret := f.user("carol", auth.Operator)
	f.nextStep()
	status, body, _ := f.do("POST", "/auth/login", "", map[string]string{"username": "carol", "password": password,
		"totp": f.code(secret)})
	if status != http.StatusOK {
		t.Fatalf("login: status %d (%v)", status, body)
	}
	f.logs.mu.Lock()
	defer f.logs.mu.Unlock()
	var logins []string
	for _, rec := range f.logs.list {
		if rec.Level != slog.LevelInfo || !strings.Contains(rec.Message, "login") {
			continue
		}
		rec.Attrs(func(a slog.Attr) bool {
			if a.Key == "user" && a.Value.String() == "carol" {
				logins = append(logins, rec.Message)
				return false
			}
			return true
		})
	}
	if diff := cmp.Diff([]string{"auth: login"}, logins); diff != "" {
		t.Errorf("login log records (-want +got):\n%s", diff)
	}
}
