package bus

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// bearerProtocol is the WebSocket subprotocol browsers use to carry a token:
// "Sec-WebSocket-Protocol: bearer, <token>" (the server selects "bearer").
const bearerProtocol = "bearer"

// defaultRetryAfter is the Retry-After of a 429 when the authenticator does
// not say how long the lockout lasts.
const defaultRetryAfter = time.Minute

// insecureSession is every request's session in insecure dev mode.
var insecureSession = auth.Session{Token: "insecure-dev", Username: "dev", Role: auth.Admin,
	Expires: time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)}

type sessionKey struct{}

// sessionOf returns the session the middleware attached to the request.
func sessionOf(ctx context.Context) auth.Session {
	s, _ := ctx.Value(sessionKey{}).(auth.Session)
	return s
}

// bearerToken extracts the token: the Authorization header, or on a
// WebSocket upgrade the subprotocol pair "bearer, <token>". Tokens in query
// strings are not accepted (URLs end up in logs).
func bearerToken(r *http.Request) string {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, token, ok := strings.Cut(h, " ")
		if ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(token)
		}
		return ""
	}
	var protos []string
	for _, h := range r.Header.Values("Sec-WebSocket-Protocol") {
		for p := range strings.SplitSeq(h, ",") {
			protos = append(protos, strings.TrimSpace(p))
		}
	}
	for i := 0; i+1 < len(protos); i++ {
		if protos[i] == bearerProtocol {
			return protos[i+1]
		}
	}
	return ""
}

// requireAuth is the reference's middleware: every request needs a valid
// bearer token (401 "Missing Authorization" / "Invalid token").
func (s *Server) requireAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.opts.Insecure {
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), sessionKey{}, insecureSession)))
			return
		}
		token := bearerToken(r)
		if token == "" {
			writeError(w, http.StatusUnauthorized, "Missing Authorization")
			return
		}
		sess, ok := s.tokenSession(w, r, token)
		if !ok {
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), sessionKey{}, sess)))
	})
}

// tokenSession resolves a bearer token to its session; when it cannot, it
// answers the request (401 "Invalid token", or 500) and reports false.
func (s *Server) tokenSession(w http.ResponseWriter, r *http.Request, token string) (auth.Session, bool) {
	sess, err := s.opts.Auth.Session(r.Context(), token)
	switch {
	case errors.Is(err, auth.ErrInvalidToken):
		writeError(w, http.StatusUnauthorized, "Invalid token")
		return auth.Session{}, false
	case err != nil:
		s.internalError(w, "session lookup failed", err)
		return auth.Session{}, false
	}
	return sess, true
}

// requireRole answers 403 {"error":"Forbidden"} unless the session's role
// allows need.
func requireRole(need auth.Role, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !sessionOf(r.Context()).Role.Allows(need) {
			writeError(w, http.StatusForbidden, "Forbidden")
			return
		}
		next(w, r)
	}
}

// loginRequest is the body of POST /auth/login.
type loginRequest struct {
	Username string `json:"username"`
	Password string `json:"password"`
	TOTP     string `json:"totp"`
}

// sessionBody is the session part of the login and /auth/me responses.
type sessionBody struct {
	Token     string `json:"token,omitempty"`
	Username  string `json:"username"`
	Role      string `json:"role"`
	ExpiresAt string `json:"expires_at"`
	// ExpiresIn is how many seconds the session has left when answered
	// (by the server's clock, so a client whose clock differs counts down
	// right): the dashboard warns before it ends.
	ExpiresIn int64 `json:"expires_in"`
	// InsecureDev says the server authenticates no one (--insecure-dev):
	// the dashboard then opens without its login form.
	InsecureDev bool `json:"insecure_dev,omitempty"`
}

// bodyOf is the session body of sess, answered at now.
func bodyOf(sess auth.Session, withToken bool, now time.Time) sessionBody {
	b := sessionBody{Username: sess.Username, Role: string(sess.Role), ExpiresAt: sess.Expires.UTC().Format(time.RFC3339),
		ExpiresIn: max(0, int64(sess.Expires.Sub(now)/time.Second))}
	if withToken {
		b.Token = sess.Token
	}
	return b
}

// clocked is an Auth with a clock of its own (*auth.Service): sessions
// expire by it.
type clocked interface{ Now() time.Time }

// now is the time by the clock sessions expire by: the Auth's when it has
// one, else the system's.
func (s *Server) now() time.Time {
	if c, ok := s.opts.Auth.(clocked); ok {
		return c.Now()
	}
	return time.Now()
}

// retryAfterer is an error that knows how long a lockout lasts.
type retryAfterer interface{ RetryAfter() time.Duration }

// handleLogin is POST /auth/login.
func (s *Server) handleLogin(w http.ResponseWriter, r *http.Request) {
	var req loginRequest
	if err := readJSON(r, &req); err != nil {
		writeReadError(w, err)
		return
	}
	if req.Username == "" || req.Password == "" {
		writeError(w, http.StatusBadRequest, "Credentials required")
		return
	}
	if s.opts.Insecure {
		sess := insecureSession
		sess.Username = req.Username
		b := bodyOf(sess, true, s.now())
		b.InsecureDev = true
		writeJSON(w, http.StatusOK, b)
		return
	}
	if strings.TrimSpace(req.TOTP) == "" {
		// A reference-style body without a code: refused before any check,
		// so it tells nothing about the password and costs no lockout.
		writeError(w, http.StatusBadRequest, "TOTP code required")
		return
	}
	sess, err := s.opts.Auth.Login(r.Context(), auth.Credentials{Username: req.Username, Password: req.Password,
		TOTP: req.TOTP, Addr: clientAddr(r)})
	switch {
	case err == nil:
		// The auth service logs the login ("auth: login"): logging it here
		// too would count every login twice.
		writeJSON(w, http.StatusOK, bodyOf(sess, true, s.now()))
	case errors.Is(err, auth.ErrRateLimited):
		tooMany(w, err, "Too many failed login attempts")
	case errors.Is(err, auth.ErrBusy):
		tooMany(w, err, "Too many login attempts in progress")
	case errors.Is(err, auth.ErrInvalidCredentials):
		writeError(w, http.StatusUnauthorized, "Invalid credentials")
	default:
		s.internalError(w, "login failed", err)
	}
}

// tooMany answers 429 {"error": msg} with a Retry-After of the lockout err
// reports (in whole seconds, at least one), or defaultRetryAfter.
func tooMany(w http.ResponseWriter, err error, msg string) {
	wait := defaultRetryAfter
	var ra retryAfterer
	if errors.As(err, &ra) && ra.RetryAfter() > 0 {
		wait = ra.RetryAfter()
	}
	w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(wait.Seconds())))))
	writeError(w, http.StatusTooManyRequests, msg)
}

// handleLogout is POST /auth/logout: the token is revoked.
func (s *Server) handleLogout(w http.ResponseWriter, r *http.Request) {
	if !s.opts.Insecure {
		if err := s.opts.Auth.Logout(r.Context(), sessionOf(r.Context()).Token); err != nil &&
			!errors.Is(err, auth.ErrInvalidToken) {
			s.internalError(w, "logout failed", err)
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]string{"message": "Logged out"})
}

// handleMe is GET /auth/me.
// In insecure dev mode it answers any request, with the fixed dev token and
// insecure_dev: the dashboard asks it first and, told so, skips its login
// form (any name would log in).
func (s *Server) handleMe(w http.ResponseWriter, r *http.Request) {
	b := bodyOf(sessionOf(r.Context()), s.opts.Insecure, s.now())
	b.InsecureDev = s.opts.Insecure
	writeJSON(w, http.StatusOK, b)
}

// handleHealth is GET /health (no authentication). It answers as soon as
// the bus serves, while the organism may still be re-delivering a crash's
// backlog; "recovery" then reports how far it got.
func (s *Server) handleHealth(w http.ResponseWriter, _ *http.Request) {
	body := map[string]any{"status": "ok"}
	if st := s.opts.Organism.Recovery(); !st.Done || st.Redelivered > 0 || st.Skipped > 0 || st.Err != "" {
		r := map[string]any{"active": st.Active, "seq": st.Seq, "until": st.Until, "redelivered": st.Redelivered,
			"skipped": st.Skipped}
		if st.Err != "" {
			r["error"] = st.Err
		}
		body["recovery"] = r
	}
	writeJSON(w, http.StatusOK, body)
}
