package llm

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/config"
)

// TestRetryAfterPastTheDeadlineFailsAtOnce: a Retry-After (or a backoff)
// that ends past the call's deadline is not waited out — the wait could
// only end in the deadline — the call fails at once with ErrRetryTooLate,
// naming the backend and the wait, so the caller hears why. A wait that
// fits is waited.
func TestRetryAfterPastTheDeadlineFailsAtOnce(t *testing.T) {
	tests := []struct {
		name       string
		retryAfter string
		deadline   time.Duration // 0: none
		wantErr    error
		wantText   []string
		wantSleeps int
	}{
		{"a day on the only backend", "86400", 5 * time.Minute, ErrRetryTooLate,
			[]string{"backend only", "24h0m0s", "Retry-After"}, 0},
		{"ten minutes past a five-minute deadline", "600", 5 * time.Minute, ErrRetryTooLate,
			[]string{"backend only", "10m0s"}, 0},
		{"a minute within the deadline", "60", 5 * time.Minute, ErrRateLimited, nil, 3},
		{"no deadline: honoured", "86400", 0, ErrRateLimited, nil, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, statusReply(http.StatusTooManyRequests, tc.retryAfter))
			s := &sleeps{}
			r := NewRouter(RouterConfig{Retries: 3, BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second,
				Backends: []*Backend{backendFor(t, config.OpenAI, "only", f)}, Sleep: s.sleep})
			ctx := context.Background()
			if tc.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.deadline)
				defer cancel()
			}
			_, err := r.Chat(ctx, Request{Messages: testMessages, Agent: "mathbot", Thread: "t1"})
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			for _, want := range tc.wantText {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if n := len(s.all()); n != tc.wantSleeps {
				t.Errorf("slept %v, want %d sleeps", s.all(), tc.wantSleeps)
			}
		})
	}
}
