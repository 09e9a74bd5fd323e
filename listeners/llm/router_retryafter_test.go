package llm

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/config"
)

// TestRetryAfterHoldsBackOnlyItsBackend checks that a backend's Retry-After
// delays the next attempt only when that attempt goes to the same backend:
// failover to another backend waits the backoff, not the hour the
// rate-limited one asked for.
func TestRetryAfterHoldsBackOnlyItsBackend(t *testing.T) {
	const hour = time.Hour
	tests := []struct {
		name      string
		primary   http.HandlerFunc
		secondary http.HandlerFunc
		retries   int
		wantOrder []string
		wantFrom  string
		// wantLong marks the sleeps expected to be the Retry-After (about
		// an hour); the others must be the backoff (100ms ±25 %).
		wantLong []bool
	}{
		{
			name:      "failover does not wait for the rate-limited backend",
			primary:   statusReply(http.StatusTooManyRequests, "3600"),
			secondary: okReply(config.OpenAI, "from secondary"),
			retries:   3,
			wantOrder: []string{"primary", "secondary"},
			wantFrom:  "from secondary",
			wantLong:  []bool{false},
		},
		{
			name:      "back on the rate-limited backend its Retry-After holds",
			primary:   countingReply(1, statusReply(http.StatusTooManyRequests, "3600"), okReply(config.OpenAI, "from primary")),
			secondary: statusReply(http.StatusInternalServerError, ""),
			retries:   3,
			wantOrder: []string{"primary", "secondary", "primary"},
			wantFrom:  "from primary",
			wantLong:  []bool{false, true},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var order []string
			record := func(name string, h http.HandlerFunc) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					order = append(order, name)
					h(w, r)
				}
			}
			primary, secondary := newFake(t, record("primary", tc.primary)), newFake(t, record("secondary", tc.secondary))
			s := &sleeps{}
			r := NewRouter(RouterConfig{Retries: tc.retries, BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second,
				Sleep: s.sleep, Backends: []*Backend{
					backendFor(t, config.OpenAI, "primary", primary),
					backendFor(t, config.OpenAI, "secondary", secondary, func(c *config.Backend) { c.Priority = 2 }),
				}})
			rep, err := r.Chat(context.Background(), Request{Messages: testMessages})
			if err != nil || rep.Content != tc.wantFrom {
				t.Fatalf("reply %+v, err %v; want %q", rep, err, tc.wantFrom)
			}
			if diff := cmp.Diff(tc.wantOrder, order); diff != "" {
				t.Errorf("backends asked (-want +got):\n%s", diff)
			}
			var long []bool
			for _, d := range s.all() {
				switch {
				case d > hour-time.Minute && d <= hour:
					long = append(long, true)
				case d >= 75*time.Millisecond && d <= 125*time.Millisecond:
					long = append(long, false)
				default:
					t.Errorf("slept %v: neither the backoff nor the Retry-After", d)
				}
			}
			if diff := cmp.Diff(tc.wantLong, long); diff != "" {
				t.Errorf("sleeps %v: Retry-After ones (-want +got):\n%s", s.all(), diff)
			}
		})
	}
}
