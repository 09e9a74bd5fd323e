package pump_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// fakeStorage is a pump.Storage whose failure a test switches on and off.
type fakeStorage struct{ err atomic.Pointer[error] }

// Failing returns the failure set, nil while none is.
func (f *fakeStorage) Failing() error {
	if e := f.err.Load(); e != nil {
		return *e
	}
	return nil
}

// fail makes Failing return err (nil: the storage recovered).
func (f *fakeStorage) fail(err error) {
	if err == nil {
		f.err.Store(nil)
		return
	}
	f.err.Store(&err)
}

// errDiskFull is the failure the fake storage reports.
var errDiskFull = errors.New("disk full: database or disk is full (13)")

// stageCount counts the ingress stages the pump ran (its Observer).
type stageCount struct{ n atomic.Int64 }

// ObserveStage counts s.
func (c *stageCount) ObserveStage(pump.StageSample) { c.n.Add(1) }

// TestStorageFailingRefusesUpFront: while the storage cannot commit, a new
// external message is refused at every entry to the pump with a
// *StorageRefusal saying why and that nothing was done — before any
// ingress stage reads it and before any handler sees it — and taken again
// once the storage recovers, without a restart.
func TestStorageFailingRefusesUpFront(t *testing.T) {
	pr := newProbe()
	st := &fakeStorage{}
	stages := &stageCount{}
	p := startPump(t, pump.Options{Storage: st, Observer: stages}, sink[Ping](t, "sink", pr))
	ping := func() []byte {
		return envelope(client, "sink", stage.NewThreadID(), `<Ping xmlns=""><Text>hi</Text></Ping>`)
	}
	st.fail(errDiskFull)
	for _, tc := range []struct {
		name string
		send func(ctx context.Context) error
	}{
		{"Inject", func(ctx context.Context) error { return p.Inject(ctx, ping(), nil) }},
		{"InjectWait", func(ctx context.Context) error { _, err := p.InjectWait(ctx, ping(), nil); return err }},
		{"Send", func(ctx context.Context) error {
			_, err := p.Send(ctx, client, "sink", &Ping{Text: "hi"}, nil)
			return err
		}},
		{"SendEnvelopeQueued", func(ctx context.Context) error {
			_, _, err := p.SendEnvelopeQueued(ctx, pump.Envelope{From: client, To: "sink", Payload: []byte(`<Ping xmlns=""><Text>hi</Text></Ping>`)})
			return err
		}},
		{"Refusing", func(context.Context) error { return p.Refusing("sink") }},
		{"Refusing an unknown target", func(context.Context) error { return p.Refusing("nobody") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.send(waitCtx(t))
			if !errors.Is(err, pump.ErrCannotJournal) || !errors.Is(err, errDiskFull) {
				t.Fatalf("error %v: want one matching pump.ErrCannotJournal and the storage's failure", err)
			}
			r, ok := errors.AsType[*pump.StorageRefusal](err)
			if !ok {
				t.Fatalf("error %T %v: want a *pump.StorageRefusal", err, err)
			}
			want := "the organism cannot journal messages now (disk full: database or disk is full (13)); nothing was done; retry later"
			if diff := cmp.Diff(want, r.Text()); diff != "" {
				t.Errorf("refusal text (-want +got):\n%s", diff)
			}
			if r.RetryAfter < time.Second {
				t.Errorf("retry hint %v: want at least a second", r.RetryAfter)
			}
			if errors.Is(err, pump.ErrBusy) || errors.Is(err, pump.ErrNotDurable) {
				t.Errorf("error %v matches ErrBusy or ErrNotDurable: it is neither", err)
			}
		})
	}
	if n := stages.n.Load(); n != 0 {
		t.Errorf("%d ingress stages ran for messages refused while the storage failed; want none", n)
	}
	if calls := pr.all(); len(calls) != 0 {
		t.Errorf("a handler saw %d messages refused while the storage failed; want none", len(calls))
	}

	st.fail(nil) // the operator freed room
	if err := p.Refusing("sink"); err != nil {
		t.Fatalf("Refusing once the storage recovered: %v", err)
	}
	if _, err := injectErr(t, p, ping(), nil); err != nil {
		t.Fatalf("a message once the storage recovered: %v", err)
	}
	if c := nextLong(t, pr); c.Listener != "sink" {
		t.Fatalf("handled by %q, want sink", c.Listener)
	}
}

// TestStorageFailingLetsInternalMessagesOn: messages already in the
// organism when its storage begins to fail go on — a handler's output
// reaches its target and the conversation's answer its client — while
// new external messages are refused; nothing waits on the storage.
func TestStorageFailingLetsInternalMessagesOn(t *testing.T) {
	pr := newProbe()
	st := &fakeStorage{}
	held := newGate()
	t.Cleanup(held.open)
	started := make(chan struct{}, 1)
	relay := listenerOf(t, "relay", func(ctx context.Context, in *Ping, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		started <- struct{}{}
		if !held.wait(ctx) {
			return nil, ctx.Err()
		}
		return xmlpipe.Send("worker", &Job{Label: in.Text}), nil
	})
	p := startPump(t, pump.Options{Storage: st}, relay, sink[Job](t, "worker", pr))
	rec := newRecorder()
	if _, err := injectErr(t, p, envelope(client, "relay", stage.NewThreadID(), `<Ping xmlns=""><Text>in flight</Text></Ping>`), rec); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(twoHopWait):
		t.Fatal("relay never started")
	}
	st.fail(errDiskFull)
	if _, err := injectErr(t, p, envelope(client, "relay", stage.NewThreadID(), `<Ping xmlns=""><Text>new</Text></Ping>`), rec); !errors.Is(err, pump.ErrCannotJournal) {
		t.Fatalf("a new message while the storage fails: %v, want ErrCannotJournal", err)
	}
	held.open()
	if c := nextLong(t, pr); c.Listener != "worker" || c.Payload.(*Job).Label != "in flight" {
		t.Fatalf("worker got %+v, want the job relay sent while the storage failed", c)
	}
	waitLong(t, rec, "the in-flight conversation's end", kind(pump.EventComplete))
	if calls := pr.all(); len(calls) != 1 {
		t.Errorf("worker handled %d jobs, want only the one in flight", len(calls))
	}
	st.fail(nil)
}

// nextLong is probe.next bounded by twoHopWait (a loaded machine).
func nextLong(t *testing.T, pr *probe) call {
	t.Helper()
	select {
	case c := <-pr.ch:
		return c
	case <-time.After(twoHopWait):
		t.Fatal("timed out waiting for a handler call")
		return call{}
	}
}
