package bus

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// loginResult is one POST /auth/login answer.
type loginResult struct {
	status     int
	errText    string
	retryAfter string
}

// clientFrom is an HTTPS client whose connections leave from the loopback
// address local (127.0.0.0/8 is all loopback on Linux), each request on a
// new connection.
func (f *fixture) clientFrom(local string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: waitTimeout}
	return &http.Client{Timeout: waitTimeout, Transport: &http.Transport{
		TLSClientConfig: f.tls.Clone(), DialContext: d.DialContext, DisableKeepAlives: true,
	}}
}

// postLogin sends one login with c.
func (f *fixture) postLogin(c *http.Client, user, pass, code string) loginResult {
	body, err := json.Marshal(map[string]string{"username": user, "password": pass, "totp": code})
	if err != nil {
		f.t.Fatal(err)
	}
	resp, err := c.Post(f.base+"/auth/login", "application/json", bytes.NewReader(body))
	if err != nil {
		f.t.Errorf("login: %v", err)
		return loginResult{}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Errorf("login body: %v", err)
	}
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	text, _ := out["error"].(string)
	return loginResult{status: resp.StatusCode, errText: text, retryAfter: resp.Header.Get("Retry-After")}
}

// TestLoginBurstOverHTTP: 200 wrong logins for one user from one address
// at once, over real HTTPS connections: at most MaxFailures (3 here) are
// verified (401), every other one is 429 with Retry-After at once; the
// right password from another address still logs in while the first is
// locked out.
func TestLoginBurstOverHTTP(t *testing.T) {
	f := newFixture(t)
	secret := f.user("bob", auth.Operator)
	const n, limit = 200, 3
	attacker := f.clientFrom("127.0.0.1")
	results := make([]loginResult, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			results[i] = f.postLogin(attacker, "bob", fmt.Sprintf("wrong password %d", i), "000000")
		})
	}
	close(start)
	wg.Wait()
	counts := map[int]int{}
	for _, r := range results {
		counts[r.status]++
		switch r.status {
		case http.StatusUnauthorized:
			if r.errText != "Invalid credentials" {
				t.Errorf("401 with %q", r.errText)
			}
		case http.StatusTooManyRequests:
			if r.errText != "Too many failed login attempts" || r.retryAfter == "" || r.retryAfter == "0" {
				t.Errorf("429 with %q, Retry-After %q", r.errText, r.retryAfter)
			}
		default:
			t.Errorf("status %d %q", r.status, r.errText)
		}
	}
	t.Logf("answers by status: %v", counts)
	if counts[http.StatusUnauthorized] > limit || counts[http.StatusUnauthorized]+counts[http.StatusTooManyRequests] != n {
		t.Fatalf("answers %v: want at most %d × 401, the rest 429", counts, limit)
	}
	f.nextStep()
	if r := f.postLogin(attacker, "bob", password, f.code(secret)); r.status != http.StatusTooManyRequests {
		t.Errorf("right password from the locked address: %+v", r)
	}
	if r := f.postLogin(f.clientFrom("127.0.0.2"), "bob", password, f.code(secret)); r.status != http.StatusOK {
		t.Errorf("right password from another address: %+v", r)
	}
}

// limitedAuth refuses every login with err.
type limitedAuth struct {
	Auth
	err error
}

func (a limitedAuth) Login(context.Context, auth.Credentials) (auth.Session, error) {
	return auth.Session{}, a.err
}

// TestLoginRefusalAnswers: how each refusal of the authenticator reaches a
// client.
func TestLoginRefusalAnswers(t *testing.T) {
	tests := []struct {
		name           string
		err            error
		wantError      string
		wantRetryAfter string
	}{
		{"locked out", &auth.LimitError{Err: auth.ErrRateLimited, Wait: 90 * time.Second},
			"Too many failed login attempts", "90"},
		{"locked out, sub-second", &auth.LimitError{Err: auth.ErrRateLimited, Wait: 10 * time.Millisecond},
			"Too many failed login attempts", "1"},
		{"busy", &auth.LimitError{Err: auth.ErrBusy, Wait: time.Second},
			"Too many login attempts in progress", "1"},
		{"rate limited without a wait", auth.ErrRateLimited, "Too many failed login attempts", "60"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, func(o *Options) { o.Auth = limitedAuth{Auth: o.Auth, err: tt.err} })
			status, body, header := f.do("POST", "/auth/login", "", map[string]string{"username": "bob", "password": password, "totp": "123456"})
			if status != http.StatusTooManyRequests || body["error"] != tt.wantError || header.Get("Retry-After") != tt.wantRetryAfter {
				t.Errorf("got %d %v Retry-After %q; want 429 %q Retry-After %s", status, body, header.Get("Retry-After"),
					tt.wantError, tt.wantRetryAfter)
			}
		})
	}
}

// TestBusLegacyDisabled: without auth.legacy_totp_login a /bus client
// without a bearer token is closed with 1008 and a reason that says what
// to do, whatever its first frame; a bearer token still works.
func TestBusLegacyDisabled(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.AuthTimeout = 300 * time.Millisecond })
	secret := f.user("lena", auth.Operator)
	tests := []struct {
		name  string
		first func() string // nil: send nothing
	}{
		{"valid legacy frame", func() string { f.nextStep(); return `<authenticate totp="` + f.code(secret) + `"/>` }},
		{"envelope", func() string { return envelope("x", stage.NewThreadID(), "Dan") }},
		{"nothing", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, err := f.tryDial("/bus", nil, false)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if tt.first != nil {
				sendRaw(t, c, tt.first())
			}
			ce := closeError(t, c)
			if ce.Code != websocket.ClosePolicyViolation || ce.Text != ReasonLegacyDisabled {
				t.Errorf("closed with %d %q, want 1008 %q", ce.Code, ce.Text, ReasonLegacyDisabled)
			}
		})
	}
	if _, ok := f.logs.find("legacy authentication refused: disabled", "security", true); !ok {
		t.Error("no security event logged")
	}
	if len(ReasonLegacyDisabled) > 123 {
		t.Errorf("close reason %q is longer than a close frame allows", ReasonLegacyDisabled)
	}
	c := f.dial("/bus", f.login("lena", secret))
	sendRaw(t, c, envelope("websocket:lena", stage.NewThreadID(), "Lena"))
	if e, _ := readEnvelope(t, c); e.From != "greeter" {
		t.Errorf("first response with a bearer token %+v", e)
	}
}
