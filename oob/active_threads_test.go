package oob

import (
	"context"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/hello"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestStatusCountsOnlyRunningThreads: get-status's active-threads counts
// the threads of conversations still running, as GET /api/v1/organism
// does — not the threads a completed conversation keeps for a
// continuation, which made an idle organism report as many active threads
// as it had served conversations within the thread TTL.
func TestStatusCountsOnlyRunningThreads(t *testing.T) {
	f := newFixture(t, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	active := func() int {
		t.Helper()
		s := f.do(t, `<get-status/>`).Payload.Status
		if s == nil {
			t.Fatal("get-status answered no status")
		}
		return s.ActiveThreads
	}

	// A conversation that ran its course: greeter → shouter → printer.
	completed := make(chan struct{})
	done := pump.OutletFunc(func(e pump.Event) {
		if e.Kind == pump.EventComplete && e.Waiting == 0 {
			close(completed)
		}
	})
	if _, err := f.org.Pump.Send(ctx, "operator", "greeter", &hello.Greeting{Name: "Ada"}, done); err != nil {
		t.Fatal(err)
	}
	select {
	case <-completed:
	case <-ctx.Done():
		t.Fatal("the greeting's conversation never completed")
	}
	if st := f.org.Pump.Stats(); st.Threads == 0 {
		t.Fatal("precondition: a completed conversation's threads stay in the registry for a continuation")
	}
	if got := active(); got != 0 {
		t.Errorf("get-status after the only conversation completed: active-threads %d, want 0", got)
	}

	// A conversation whose handler still runs counts.
	entered, release := make(chan struct{}), make(chan struct{})
	pt, err := xmlpipe.PayloadTypeOf[SlowJob]()
	if err != nil {
		t.Fatal(err)
	}
	slow := pump.Listener{Name: "slowjob", Payload: pt,
		Handler: xmlpipe.Typed(func(ctx context.Context, _ *SlowJob, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
			close(entered)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil, nil
		})}
	if err := f.org.Pump.AddListener(slow); err != nil {
		t.Fatal(err)
	}
	defer close(release)
	if _, err := f.org.Pump.Send(ctx, "operator", "slowjob", &SlowJob{Label: "busy"}, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("the slow job never started")
	}
	if got := active(); got != 1 {
		t.Errorf("get-status while one conversation runs: active-threads %d, want 1", got)
	}
}
