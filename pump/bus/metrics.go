package bus

import (
	"crypto/subtle"
	"net/http"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// MinScrapeTokenLen is the shortest scrape token Options accepts.
const MinScrapeTokenLen = 32

// Metrics is what the bus serves at /metrics (*observe.Metrics implements
// it): the exposition handler, and a place to report the bus's open
// connections.
type Metrics interface {
	Handler() http.Handler
	CountConnections(n func() int)
}

// HandlerLatencies is an optional capability of Metrics: the sum and count
// of the handler timings it observed. GET /api/v1/organism reports them, so
// the dashboard (any role) draws the latency sparkline from the same numbers
// as /metrics.
type HandlerLatencies interface {
	HandlerLatency() (sum time.Duration, count int64)
}

// metricsHandler is GET /metrics: served to a request whose bearer token is
// the scrape token, else only to an admin session (401 without a token or
// with an unknown one, 403 for a viewer or operator).
func (s *Server) metricsHandler() http.Handler {
	serve := s.opts.Metrics.Handler()
	admin := s.requireAuth(requireRole(auth.Admin, func(w http.ResponseWriter, r *http.Request) {
		if sessionOf(r.Context()).Profile != "" {
			// The metrics count every listener's and thread's traffic: an
			// admin with a security profile is not shown them.
			writeError(w, http.StatusForbidden, "Forbidden")
			return
		}
		serve.ServeHTTP(w, r)
	}))
	scrape := []byte(s.opts.ScrapeToken)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(scrape) > 0 && subtle.ConstantTimeCompare([]byte(bearerToken(r)), scrape) == 1 {
			serve.ServeHTTP(w, r)
			return
		}
		admin.ServeHTTP(w, r)
	})
}

// connections is how many WebSocket connections are open.
func (s *Server) connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}
