package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/bus/wire"
)

// fakeBus speaks the bus's protocol as far as the client uses it: login
// and logout, two REST paths, and a /ws socket whose behaviour the
// greeting and the requests choose.
type fakeBus struct {
	greeting string // the first frame's type ("connected" unless set)
	logouts  atomic.Int64
}

func (f *fakeBus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/auth/login":
		var c struct{ Username, Password, TOTP string }
		_ = json.NewDecoder(r.Body).Decode(&c)
		switch {
		case c.Username == "locked":
			w.Header().Set("Retry-After", "300")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"error":"Too many failed login attempts"}`)
		case c.Username == "busy":
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"error":"Too many login attempts in progress"}`)
		case c.Password == "boom":
			http.Error(w, `{"error":"store down"}`, http.StatusInternalServerError)
		case c.Username != "ann" || c.Password != "pw" || c.TOTP != "123456":
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":"Invalid credentials"}`)
		default:
			_, _ = io.WriteString(w, `{"token":"tok"}`)
		}
		return
	case "/auth/logout":
		if r.Header.Get("Authorization") == "Bearer tok" {
			f.logouts.Add(1)
		}
		return
	}
	if r.Header.Get("Authorization") != "Bearer tok" {
		http.Error(w, `{"error":"no"}`, http.StatusUnauthorized)
		return
	}
	switch r.URL.Path {
	case "/api/v1/echo":
		var body map[string]string
		_ = json.NewDecoder(r.Body).Decode(&body)
		_ = json.NewEncoder(w).Encode(map[string]string{"method": r.Method, "said": body["say"]})
	case "/api/v1/secret":
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `{"error":"Forbidden"}`)
	case "/ws":
		f.socket(w, r)
	default:
		http.NotFound(w, r)
	}
}

// socket answers each request by type: subscribe (refused when it asks
// for "nothing"), status (an event first, then the reply), fail (an error
// frame), send (a "sent" acknowledgement per raw send), drop (closes).
func (f *fakeBus) socket(w http.ResponseWriter, r *http.Request) {
	ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer ws.Close()
	greeting := f.greeting
	if greeting == "" {
		greeting = wire.TypeConnected
	}
	_ = ws.WriteJSON(map[string]any{"type": greeting, "username": "ann", "role": "operator"})
	for {
		var req wire.Request
		if err := ws.ReadJSON(&req); err != nil {
			return
		}
		id := req.ID
		switch req.Type {
		case wire.TypeSubscribe:
			_ = ws.WriteJSON(map[string]any{"type": wire.TypeHalted, "scope": "agents", "by": "bob"})
			if len(req.Events) == 1 && req.Events[0] == "nothing" {
				_ = ws.WriteJSON(map[string]any{"type": wire.TypeError, "id": id, "error": "unknown event", "code": "bad_request"})
				continue
			}
			_ = ws.WriteJSON(map[string]any{"type": wire.TypeSubscribed, "id": id, "events": req.Events})
		case wire.TypeStatus:
			_ = ws.WriteJSON(map[string]any{"type": wire.TypeOutput, "thread_id": "t", "from": "x", "text": "before " + string(id)})
			_ = ws.WriteJSON(map[string]any{"type": wire.TypeStatus, "id": id, "organism": "org-" + req.Prefix})
		case "fail":
			_ = ws.WriteJSON(map[string]any{"type": wire.TypeError, "id": id, "error": "nope", "code": "bad_request",
				"diagnostics": []string{"why"}})
		case wire.TypeSend:
			conv := "conv-" + req.Raw
			if req.ThreadID != "" { // the client chose the conversation's thread
				conv = req.ThreadID
			}
			_ = ws.WriteJSON(map[string]any{"type": wire.TypeSent, "id": id, "thread_id": conv})
		case "echo": // the prefix back, once per byte of the id
			for range len(id) {
				_ = ws.WriteMessage(websocket.TextMessage, []byte(req.Prefix))
			}
		case "drop":
			return
		}
	}
}

// startFake serves f over TLS on loopback; it returns its base URL and an
// HTTP client that trusts it.
func startFake(t *testing.T, f *fakeBus) (string, *http.Client) {
	t.Helper()
	srv := httptest.NewUnstartedServer(f)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL, srv.Client()
}

func TestLogin(t *testing.T) {
	base, hc := startFake(t, &fakeBus{})
	tests := []struct {
		name      string
		creds     auth.Credentials
		wantLogin bool // a refusal wrapping ErrLogin
		wantErr   string
	}{
		{"ok", auth.Credentials{Username: "ann", Password: "pw", TOTP: "123456"}, false, ""},
		{"wrong password", auth.Credentials{Username: "ann", Password: "x", TOTP: "123456"}, true, "login failed: Invalid credentials"},
		{"server error", auth.Credentials{Username: "ann", Password: "boom"}, false, "login: 500"},
		// A lockout says when to try again (the server's Retry-After).
		{"locked out", auth.Credentials{Username: "locked", Password: "x"}, true,
			"login failed: Too many failed login attempts; try again in 5m0s"},
		{"busy without Retry-After", auth.Credentials{Username: "busy", Password: "x"}, true,
			"login failed: Too many login attempts in progress"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl, err := Login(t.Context(), hc, base+"/", tt.creds)
			if tt.wantErr == "" {
				if err != nil || cl.Token != "tok" || cl.Base != base {
					t.Fatalf("Login = %+v, %v; want token tok at %s", cl, err, base)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || errors.Is(err, ErrLogin) != tt.wantLogin {
				t.Fatalf("Login error = %v; want %q (ErrLogin %t)", err, tt.wantErr, tt.wantLogin)
			}
		})
	}
}

func TestClientRESTAndLogout(t *testing.T) {
	f := &fakeBus{}
	base, hc := startFake(t, f)
	cl, err := Login(t.Context(), hc, base, auth.Credentials{Username: "ann", Password: "pw", TOTP: "123456"})
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]string
	if err := cl.Do(t.Context(), http.MethodPost, "/api/v1/echo", map[string]string{"say": "hi"}, &out); err != nil ||
		out["said"] != "hi" || out["method"] != http.MethodPost {
		t.Fatalf("Do echo = %v, %v", out, err)
	}
	err = cl.Do(t.Context(), http.MethodGet, "/api/v1/secret", nil, nil)
	if se, ok := errors.AsType[*StatusError](err); !ok || se.Status != http.StatusForbidden || se.Msg != "Forbidden" {
		t.Fatalf("Do secret = %v; want a 403 StatusError saying Forbidden", err)
	}
	err = cl.Do(t.Context(), http.MethodGet, "/api/v1/none", nil, nil)
	if se, ok := errors.AsType[*StatusError](err); !ok || se.Status != http.StatusNotFound {
		t.Fatalf("Do none = %v; want a 404 StatusError", err)
	}
	cl.Logout(t.Context())
	if n := f.logouts.Load(); n != 1 {
		t.Fatalf("logouts = %d, want 1", n)
	}
}

func TestWSURL(t *testing.T) {
	for base, want := range map[string]string{
		"https://h:8765":        "wss://h:8765/ws",
		"http://h:8765":         "ws://h:8765/ws",
		"https://h:8765/prefix": "wss://h:8765/prefix/ws",
	} {
		if got := (&Client{Base: base}).WSURL(); got != want {
			t.Errorf("WSURL(%s) = %s, want %s", base, got, want)
		}
	}
}

// dialFake logs in to a fake bus and opens its socket.
func dialFake(t *testing.T, f *fakeBus) (*Conn, error) {
	t.Helper()
	base, hc := startFake(t, f)
	cl, err := Login(t.Context(), hc, base, auth.Credentials{Username: "ann", Password: "pw", TOTP: "123456"})
	if err != nil {
		t.Fatal(err)
	}
	tlsConf := hc.Transport.(*http.Transport).TLSClientConfig
	return Dial(t.Context(), Target{URL: cl.WSURL(), TLS: tlsConf, Token: cl.Token, Timeout: 30 * time.Second})
}

func TestConnHandshakeSubscribeAndPipelinedSends(t *testing.T) {
	c, err := dialFake(t, &fakeBus{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Username != "ann" || c.Role != "operator" {
		t.Fatalf("greeting = %s/%s, want ann/operator", c.Username, c.Role)
	}
	if err := c.Subscribe([]string{wire.TypeOutput}); err != nil { // skips the halt pushed before the answer
		t.Fatalf("subscribe: %v", err)
	}
	for id := int64(1); id <= 3; id++ {
		if err := c.SendRaw(id, fmt.Sprintf("@greeter %d", id%2)); err != nil {
			t.Fatal(err)
		}
	}
	const chosen = "4f1c2a9e-7b3d-4e8a-9c1f-2d3e4f5a6b7c"
	if err := c.SendRawOn(4, "@greeter on", chosen); err != nil {
		t.Fatal(err)
	}
	for id := int64(1); id <= 4; id++ {
		want := fmt.Sprintf("conv-@greeter %d", id%2)
		if id == 4 {
			want = chosen // SendRawOn's thread_id
		}
		data, err := c.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		var sent struct {
			Type     string `json:"type"`
			ID       int64  `json:"id"`
			ThreadID string `json:"thread_id"`
		}
		if err := json.Unmarshal(data, &sent); err != nil || sent.Type != wire.TypeSent || sent.ID != id ||
			sent.ThreadID != want {
			t.Fatalf("answer %d = %s (%v)", id, data, err)
		}
	}
	if err := c.CloseFrame(); err != nil {
		t.Fatalf("close frame: %v", err)
	}
	if _, err := c.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
		t.Fatalf("read after close frame: %v, want the bus's normal closure", err)
	}
}

// TestReadFrameReusesItsBuffer checks ReadFrame on frames of every size
// (empty, one byte, larger than the buffer kept) and that a frame's bytes
// stay valid until the next read, in the buffer the next one reuses.
func TestReadFrameReusesItsBuffer(t *testing.T) {
	c, err := dialFake(t, &fakeBus{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sizes := []int{0, 1, 511, 512, 513, 4096, maxKeptReadBuffer + 1, 3, 70_000, 10}
	for i, n := range sizes {
		want := strings.Repeat(string(rune('a'+i)), n)
		if err := c.WriteJSON(wire.Request{Head: wire.Head{Type: "echo", ID: json.RawMessage("12")}, Prefix: want}); err != nil {
			t.Fatal(err)
		}
		first, err := c.ReadFrame()
		if err != nil {
			t.Fatalf("size %d: %v", n, err)
		}
		got := string(first) // copied before the next read
		second, err := c.ReadFrame()
		if err != nil {
			t.Fatalf("size %d: %v", n, err)
		}
		if got != want || string(second) != want {
			t.Fatalf("size %d: read %d and %d bytes, want %d", n, len(got), len(second), n)
		}
		if n <= maxKeptReadBuffer && n > 0 && &first[0] != &second[0] {
			t.Errorf("size %d: the second frame is in a new buffer", n)
		}
	}
}

func TestConnHandshakeErrors(t *testing.T) {
	if _, err := dialFake(t, &fakeBus{greeting: "welcome"}); !errors.Is(err, ErrHandshake) {
		t.Errorf("wrong greeting: %v, want ErrHandshake", err)
	}
	c, err := dialFake(t, &fakeBus{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Subscribe([]string{"nothing"}); !errors.Is(err, ErrHandshake) || !strings.Contains(err.Error(), "unknown event") {
		t.Errorf("refused subscribe: %v, want ErrHandshake saying why", err)
	}
	base, _ := startFake(t, &fakeBus{})
	_, err = Dial(t.Context(), Target{URL: "wss" + strings.TrimPrefix(base, "https") + "/ws", TLS: nil, Token: "tok"})
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("untrusted certificate: %v", err)
	}
}

func TestSessionMatchesRepliesAndEvents(t *testing.T) {
	c, err := dialFake(t, &fakeBus{})
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		events []string
	)
	s := NewSession(c, func(typ string, data []byte) {
		mu.Lock()
		events = append(events, typ)
		mu.Unlock()
	})
	defer s.Close(5 * time.Second)
	if s.Conn() != c {
		t.Fatal("Conn is not the session's socket")
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			var st wire.Status
			prefix := fmt.Sprint(i)
			if err := s.Request(t.Context(), wire.Request{Head: wire.Head{Type: wire.TypeStatus}, Prefix: prefix}, &st); err != nil {
				errs <- err
			} else if st.Organism != "org-"+prefix {
				errs <- fmt.Errorf("request %d got the reply %q", i, st.Organism)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	err = s.Request(t.Context(), wire.Request{Head: wire.Head{Type: "fail"}}, &struct{}{})
	if ef, ok := errors.AsType[*ErrorFrame](err); !ok || ef.Error() != "nope" || ef.Frame.Code != "bad_request" ||
		len(ef.Frame.Diagnostics) != 1 {
		t.Fatalf("error frame = %v, want *ErrorFrame nope/bad_request", err)
	}
	mu.Lock()
	n := len(events)
	mu.Unlock()
	if n != 8 {
		t.Errorf("events = %d, want the 8 outputs pushed before the replies", n)
	}
}

func TestSessionDisconnect(t *testing.T) {
	c, err := dialFake(t, &fakeBus{})
	if err != nil {
		t.Fatal(err)
	}
	s := NewSession(c, func(string, []byte) {})
	if err := s.Err(); err != nil {
		t.Fatalf("Err before the end = %v", err)
	}
	err = s.Request(t.Context(), wire.Request{Head: wire.Head{Type: "drop"}}, &struct{}{})
	if !errors.Is(err, ErrDisconnected) {
		t.Fatalf("request on a dropped socket: %v, want ErrDisconnected", err)
	}
	select {
	case <-s.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("Done not closed after the drop")
	}
	if !errors.Is(s.Err(), ErrDisconnected) {
		t.Fatalf("Err = %v, want ErrDisconnected", s.Err())
	}
	if err := s.Request(t.Context(), wire.Request{Head: wire.Head{Type: wire.TypeStatus}}, &struct{}{}); !errors.Is(err, ErrDisconnected) {
		t.Fatalf("request after the end: %v", err)
	}
	s.Close(time.Second)
	s.Close(time.Second) // a second Close only waits

	c2, err := dialFake(t, &fakeBus{})
	if err != nil {
		t.Fatal(err)
	}
	s2 := NewSession(c2, func(string, []byte) {})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s2.Request(ctx, wire.Request{Head: wire.Head{Type: "silent"}}, &struct{}{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled request: %v", err)
	}
	s2.Close(5 * time.Second)
	if err := s2.Err(); err != nil {
		t.Errorf("Err after Close = %v, want nil", err)
	}
}

// TestRetryAfter reads a Retry-After in seconds or as an HTTP date.
func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 29, 4, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		v    string
		want time.Duration
	}{
		{"", 0}, {"300", 5 * time.Minute}, {" 7 ", 7 * time.Second}, {"-3", 0}, {"soon", 0},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
	} {
		h := http.Header{}
		if tt.v != "" {
			h.Set("Retry-After", tt.v)
		}
		if got := retryAfter(h, now); got != tt.want {
			t.Errorf("retryAfter(%q) = %v, want %v", tt.v, got, tt.want)
		}
	}
}
