package registry

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/google/uuid"
)

// TestThreadsConcurrent runs conversations, cascading ends racing with
// extensions, TTL sweeps and readers at once. Afterwards the registry is
// empty, and the sink — replaying events as a store would — never saw a node
// created under a dead parent or ended before it was created.
func TestThreadsConcurrent(t *testing.T) {
	clk := newFakeClock()
	sink := newRecordingThreadSink()
	th := NewThreads(ThreadsConfig{TTL: time.Minute, Clock: clk.Now, Sink: sink, Logger: slog.New(slog.DiscardHandler)})
	var ended sync.Map
	th.OnEnd(func(ids []string) {
		for _, id := range ids {
			if _, dup := ended.LoadOrStore(id, true); dup {
				t.Errorf("OnEnd told twice about %s", id)
			}
		}
	})

	const workers, conversations = 4, 60
	tolerate := func(err error) {
		if err != nil && !errors.Is(err, ErrUnknownThread) {
			t.Errorf("unexpected error: %v", err)
		}
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	var readers sync.WaitGroup
	readers.Add(1)
	go func() { // readers and sweeper until the workers finish
		defer readers.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			for id := range th.DebugDump() {
				th.Ancestors(id)
				th.Root(id)
				th.Depth(id)
				th.Touch(id)
			}
			clk.Advance(time.Second)
			th.Collect()
		}
	}()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range conversations {
				root := uuid.NewString()
				if err := th.Begin(root, fmt.Sprintf("client-%d", w), "router"); err != nil {
					t.Errorf("Begin: %v", err)
					return
				}
				// A responding chain …
				id := root
				for _, hop := range []string{"greeter", "calculator.add", "greeter"} {
					next, err := th.Extend(id, hop)
					tolerate(err)
					if err != nil {
						break
					}
					id = next
				}
				for id != "" {
					_, reply, err := th.Prune(id)
					tolerate(err)
					if err != nil || reply == id {
						break
					}
					id = reply
				}
				// … and a cascade racing with extensions under the same root.
				root2 := uuid.NewString()
				if err := th.Begin(root2, "console", ""); err != nil {
					t.Errorf("Begin: %v", err)
					return
				}
				start := make(chan struct{})
				var pair sync.WaitGroup
				pair.Add(2)
				go func() {
					defer pair.Done()
					<-start
					for i := range 20 {
						child, err := th.Extend(root2, fmt.Sprintf("member-%d", i%4))
						tolerate(err)
						if err == nil {
							_, err = th.Extend(child, "tool")
							tolerate(err)
						}
					}
				}()
				go func() {
					defer pair.Done()
					<-start
					if c%2 == 0 {
						tolerate(th.End(root2))
					}
				}()
				close(start)
				pair.Wait()
				tolerate(th.End(root2))
			}
		}()
	}
	wg.Wait()
	close(done)
	readers.Wait()
	for id := range th.DebugDump() {
		tolerate(th.End(id))
	}

	if th.Len() != 0 {
		t.Errorf("Len = %d after every conversation ended, want 0", th.Len())
	}
	if diff := cmp.Diff([]string(nil), sink.liveIDs(), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("sink still believes these live (-want +got):\n%s", diff)
	}
	if p := sink.issues(); len(p) != 0 {
		t.Errorf("sink saw misordered events: %v", p)
	}
}
