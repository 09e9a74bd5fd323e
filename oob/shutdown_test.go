package oob

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/registry/store"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// SlowJob is the payload of the blocking listener the shutdown tests add.
type SlowJob struct{ Label string }

// stopRequest is what the shutdown operation handed the Stopper.
type stopRequest struct {
	graceful bool
	timeout  time.Duration
}

// TestShutdownModes: through the OOB operation, a graceful shutdown drains
// (the running handler finishes and the queued message is handled), an
// immediate one does not (the running handler is cancelled, the queued
// message is never handled, and both stay undelivered in the journal for
// recovery at the next start).
func TestShutdownModes(t *testing.T) {
	tests := []struct {
		mode        string
		graceful    bool
		handled     []string
		undelivered []string
	}{
		{"graceful", true, []string{"running", "queued"}, nil},
		{"immediate", false, nil, []string{"queued", "running"}},
	}
	for _, tc := range tests {
		t.Run(tc.mode, func(t *testing.T) {
			reqs := make(chan stopRequest, 1)
			f := newFixture(t, func(o *Options) {
				o.Target.Stopper = StopperFunc(func(graceful bool, timeout time.Duration, _ string) {
					reqs <- stopRequest{graceful, timeout}
				})
			})
			entered, handled := make(chan string, 4), make(chan string, 4)
			release := make(chan struct{})
			pt, err := xmlpipe.PayloadTypeOf[SlowJob]()
			if err != nil {
				t.Fatal(err)
			}
			slow := pump.Listener{Name: "slowjob", Payload: pt, Workers: 1,
				Handler: xmlpipe.Typed(func(ctx context.Context, j *SlowJob, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
					entered <- j.Label
					select {
					case <-ctx.Done():
						return nil, ctx.Err()
					case <-release:
					case <-t.Context().Done():
					}
					handled <- j.Label
					return nil, nil
				})}
			if err := f.org.Pump.AddListener(slow); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			for _, label := range []string{"running", "queued"} {
				if _, err := f.org.Pump.Send(ctx, "operator", "slowjob", &SlowJob{Label: label}, nil); err != nil {
					t.Fatal(err)
				}
			}
			if got := <-entered; got != "running" {
				t.Fatalf("entered %q", got)
			}

			r := f.do(t, `<shutdown><mode>`+tc.mode+`</mode><timeout-seconds>5</timeout-seconds></shutdown>`)
			if r.Payload.Ack == nil || !r.Payload.Ack.Success {
				t.Fatalf("shutdown: %+v", r.Payload)
			}
			req := <-reqs
			if req != (stopRequest{tc.graceful, 5 * time.Second}) {
				t.Fatalf("Stopper got %+v", req)
			}
			stopCtx, stopCancel := context.WithTimeout(context.Background(), req.timeout)
			defer stopCancel()
			stopped := make(chan error, 1)
			go func() { stopped <- f.org.Stop(stopCtx, req.graceful) }()
			if tc.graceful { // release the handler once the drain began
				for !errors.Is(f.org.Pump.Inject(ctx, []byte("<x/>"), nil), pump.ErrClosed) {
					if ctx.Err() != nil {
						t.Fatal("the shutdown never began")
					}
					runtime.Gosched()
				}
				close(release)
			}
			if err := <-stopped; err != nil {
				t.Fatalf("Stop: %v", err)
			}
			close(handled)
			var got []string
			for l := range handled {
				got = append(got, l)
			}
			if diff := cmp.Diff(tc.handled, got); diff != "" {
				t.Errorf("handled (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.undelivered, undeliveredSlowJobs(t, filepath.Join(f.dir, "data"))); diff != "" {
				t.Errorf("undelivered in the journal (-want +got):\n%s", diff)
			}
		})
	}
}

// undeliveredSlowJobs returns the labels of the SlowJob messages the journal
// in dir holds undelivered, sorted.
func undeliveredSlowJobs(t *testing.T, dir string) []string {
	t.Helper()
	r, err := store.OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	es, err := r.UndeliveredAfter(0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		if e.PayloadTag != "SlowJob" {
			continue
		}
		s := string(e.Bytes)
		_, rest, _ := strings.Cut(s, "<Label>")
		label, _, _ := strings.Cut(rest, "</Label>")
		out = append(out, label)
	}
	slices.Sort(out)
	return out
}
