package organism

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/registry/store"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestCallableRunsOnceMoreAfterAStop: an organism stops while a callable's
// call runs — by an immediate shutdown, which kills the callee's
// conversation the call gives up, or by a crash, which kills nothing. At
// the next start the call's message is re-delivered and begins the
// callee's conversation anew, which answers it; the callee's work runs
// once more, not twice: the conversation the crashed call began, which
// nobody waits for any more, is killed instead of re-delivered.
func TestCallableRunsOnceMoreAfterAStop(t *testing.T) {
	for _, tc := range []struct {
		name  string
		crash bool
	}{
		{"immediate shutdown", false},
		{"crash", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var runs atomic.Int32
			var finish atomic.Bool
			type began struct {
				thread string
				seq    int64 // the message's journal seq (pump.MessageSeq)
			}
			started := make(chan began, 8)
			cat := catalog.Builtin()
			cat.AddPayload(catalog.Payload{Name: "test.SlowQuery", Type: reflect.TypeFor[slowQuery]()})
			cat.AddHandler(catalog.Handler{Name: "test.Slow", Takes: reflect.TypeFor[slowQuery](),
				New: func(catalog.Env) xmlpipe.Handler {
					return xmlpipe.Typed(func(ctx context.Context, _ *slowQuery, md xmlpipe.Metadata) (xmlpipe.Response, error) {
						runs.Add(1)
						seq, _ := pump.MessageSeq(ctx)
						started <- began{md.ThreadID, seq}
						if finish.Load() {
							return xmlpipe.Respond(&slowAnswer{Text: "done"}), nil
						}
						<-ctx.Done()
						return nil, ctx.Err()
					})
				}})
			cfg, err := config.Parse("organism.yaml", []byte(`organism: {name: callee}
listeners:
  - name: slow
    payload_class: test.SlowQuery
    handler: test.Slow
    description: Answers slowly
    timeout: 1h
    callable:
      description: Does the work
      parameters:
        - {name: Text, required: true}
`))
			if err != nil {
				t.Fatal(err)
			}
			// start starts an organism on dir, watch (if set) watching its
			// pump from before its recovery can re-deliver anything.
			start := func(dir string, watch pump.Outlet) *Organism {
				o, err := New(cfg, Options{DataDir: dir, Catalog: cat})
				if err != nil {
					t.Fatal(err)
				}
				if watch != nil {
					o.Pump.Watch(watch)
				}
				if err := o.Start(); err != nil {
					t.Fatal(err)
				}
				return o
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()

			o := start(dir, nil)
			call, err := o.Pump.SendEnvelope(ctx, pump.Envelope{From: "console", To: "slow.call",
				Payload: []byte(`<SlowCall xmlns=""><Text>x</Text></SlowCall>`)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			var first string
			select {
			case s := <-started:
				first = s.thread
				// The pump may run a handler before its message's record is
				// durable: without it the crash would leave no conversation
				// to find, hence nothing to kill.
				if err := o.Store().WaitDurable(ctx, s.seq); err != nil {
					t.Fatal(err)
				}
			case <-ctx.Done():
				t.Fatal("the callee never ran")
			}
			if tc.crash {
				dir = crashCopy(t, o.Store(), dir)
				t.Cleanup(func() { _ = o.ShutdownNow(context.Background()) })
			} else if err := o.ShutdownNow(ctx); err != nil {
				t.Fatal(err)
			}
			finish.Store(true)

			answered := make(chan pump.Event, 1)
			o2 := start(dir, pump.OutletFunc(func(ev pump.Event) {
				if ev.Kind == pump.EventReply && ev.Conversation == call && ev.From == "slow.call" {
					select {
					case answered <- ev:
					default:
					}
				}
			}))
			if err := o2.WaitRecovered(ctx); err != nil {
				t.Fatal(err)
			}
			select {
			case ev := <-answered:
				if diff := cmp.Diff(any(&slowAnswer{Text: "done"}), ev.Payload); diff != "" {
					t.Errorf("the call's answer after the restart (-want +got):\n%s", diff)
				}
			case <-ctx.Done():
				t.Fatal("the call was not answered after the restart")
			}
			if err := o2.Shutdown(ctx); err != nil { // drains whatever recovery handed the pump
				t.Fatal(err)
			}
			if n := runs.Load(); n != 2 {
				t.Errorf("the callee ran %d times, want 2: once before the stop, once for the re-delivered call", n)
			}
			st, err := store.Open(dir, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if killed, err := st.Killed(first); err != nil || !killed {
				t.Errorf("the conversation the stopped call began: killed %v (%v), want killed for good", killed, err)
			}
		})
	}
}

// crashCopy returns a copy of dir's database as a SIGKILL would leave it
// now: everything st queued so far is durable (the copy is taken while a
// write queued after it holds st's writer), nothing after.
func crashCopy(t *testing.T, st *store.Store, dir string) string {
	t.Helper()
	entered, gate := make(chan struct{}), make(chan struct{})
	if err := st.WriteNow("hold", func(*store.Tx) error {
		close(entered)
		<-gate
		return nil
	}, nil); err != nil {
		t.Fatal(err)
	}
	<-entered
	defer close(gate)
	to := t.TempDir()
	for _, name := range []string{store.DatabaseFileName, store.DatabaseFileName + "-wal"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return to
}
