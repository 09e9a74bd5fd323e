package pump_test

import (
	"context"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestHandlerContextDeadline: a handler's context reports its listener's
// timeout as its Deadline, so a handler can refuse at once a wait that
// would outlast it (an LLM provider's Retry-After); without a timeout it
// has none.
func TestHandlerContextDeadline(t *testing.T) {
	tests := []struct {
		name    string
		timeout time.Duration
		want    bool
	}{
		{"a timeout", time.Minute, true},
		{"none", -1, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			type seen struct {
				at       time.Time
				deadline time.Time
				ok       bool
			}
			got := make(chan seen, 1)
			l := listenerOf(t, "timed", func(ctx context.Context, _ *Ping, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
				d, ok := ctx.Deadline()
				got <- seen{time.Now(), d, ok}
				return nil, nil
			})
			l.Timeout = tc.timeout
			p := startPump(t, pump.Options{}, l)
			mustSend(t, p, client, "timed", &Ping{Text: "hi"}, nil)
			var s seen
			select {
			case s = <-got:
			case <-waitCtx(t).Done():
				t.Fatal("the handler never ran")
			}
			if s.ok != tc.want {
				t.Fatalf("Deadline reported %v, want %v", s.ok, tc.want)
			}
			if left := s.deadline.Sub(s.at); tc.want && (left <= 0 || left > tc.timeout) {
				t.Errorf("deadline %v from the call's start, want within the timeout %v", left, tc.timeout)
			}
		})
	}
}
