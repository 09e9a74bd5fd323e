package client

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// ErrLogin: the bus refused the credentials (or rate-limited them). A
// refusal is a *LoginError, which wraps it.
var ErrLogin = errors.New("login failed")

// LoginError is a login the bus refused: its reason and, when it locked the
// user out or was too busy, how long to wait before trying again.
type LoginError struct {
	// Reason is the bus's reason ("Invalid credentials", "Too many failed
	// login attempts"), or the HTTP status when it gave none.
	Reason string
	// RetryAfter is the bus's Retry-After (zero when it sent none).
	RetryAfter time.Duration
}

// Error reads "login failed: <reason>", with "; try again in <wait>" when
// the bus said when.
func (e *LoginError) Error() string {
	if e.RetryAfter > 0 {
		return fmt.Sprintf("%v: %s; try again in %s", ErrLogin, e.Reason, e.RetryAfter)
	}
	return fmt.Sprintf("%v: %s", ErrLogin, e.Reason)
}

// Unwrap returns ErrLogin.
func (e *LoginError) Unwrap() error { return ErrLogin }

// retryAfter reads a Retry-After header: delay seconds or an HTTP date
// (zero when absent, malformed or past).
func retryAfter(h http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil {
		return time.Duration(max(n, 0)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now).Round(time.Second)
	}
	return 0
}

// Client is a user logged in to a bus: REST requests and /ws sockets carry
// its bearer token.
type Client struct {
	// Base is the bus's URL ("https://host:8765", no trailing slash).
	Base string
	// HTTP runs the REST requests (its transport holds the TLS
	// configuration).
	HTTP *http.Client
	// Token is the bearer token the login returned.
	Token string
}

// Login logs in at base over POST /auth/login with hc. A refusal (400, 401,
// 429) is a *LoginError (wrapping ErrLogin) with the server's reason and
// Retry-After. A TOTP code is accepted
// once: log in once and share the token across sockets.
func Login(ctx context.Context, hc *http.Client, base string, c auth.Credentials) (*Client, error) {
	base = strings.TrimRight(base, "/")
	body, err := json.Marshal(map[string]string{"username": c.Username, "password": c.Password, "totp": c.TOTP})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/auth/login", bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("login: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("login: %w", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var out struct {
		Token, Error string
	}
	_ = json.Unmarshal(raw, &out)
	switch {
	case resp.StatusCode == http.StatusOK && out.Token != "":
		return &Client{Base: base, HTTP: hc, Token: out.Token}, nil
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusTooManyRequests ||
		resp.StatusCode == http.StatusBadRequest:
		return nil, &LoginError{Reason: cmp.Or(out.Error, resp.Status), RetryAfter: retryAfter(resp.Header, time.Now())}
	default:
		return nil, fmt.Errorf("login: %s: %s", resp.Status, cmp.Or(out.Error, strings.TrimSpace(string(raw))))
	}
}

// Logout revokes the token (best effort) and closes the HTTP client's idle
// connections.
func (c *Client) Logout(ctx context.Context) {
	defer c.HTTP.CloseIdleConnections()
	if c.Token == "" {
		return
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.Base+"/auth/logout", nil)
	if err != nil {
		return
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	if resp, err := c.HTTP.Do(req); err == nil {
		resp.Body.Close()
	}
}

// WSURL is the bus's /ws URL: wss:// for an https:// base, ws:// for an
// http:// one (a server in insecure dev mode).
func (c *Client) WSURL() string {
	if rest, ok := strings.CutPrefix(c.Base, "http://"); ok {
		return "ws://" + rest + "/ws"
	}
	return "wss://" + strings.TrimPrefix(c.Base, "https://") + "/ws"
}

// StatusError is a REST answer other than 2xx: its status and the server's
// error text.
type StatusError struct {
	Status int
	Msg    string
}

// Error is the server's error text (the HTTP status when it gave none).
func (e *StatusError) Error() string { return e.Msg }

// Do runs one REST request (path from the root, "/api/v1/…") as the
// logged-in user with body as JSON (nil: none) and decodes the JSON answer
// into out (nil: ignored). An answer other than 2xx is a *StatusError.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("client: %s %s: %w", method, strings.SplitN(path, "?", 2)[0], err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(data, &e)
		return &StatusError{Status: resp.StatusCode, Msg: cmp.Or(e.Error, resp.Status)}
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}
