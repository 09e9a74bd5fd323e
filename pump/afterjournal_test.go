package pump_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// orderJournal keeps, in order, what was journaled and when the hooks ran:
// "record kind from>to", "delivered" and "hook".
type orderJournal struct {
	mu    sync.Mutex
	seq   int64
	steps []string
}

func (j *orderJournal) Record(r pump.Record) { j.RecordSeq(r) }

func (j *orderJournal) RecordSeq(r pump.Record) int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.seq++
	j.steps = append(j.steps, fmt.Sprintf("record %s %s>%s", r.Kind, r.From, r.To))
	return j.seq
}

func (j *orderJournal) Delivered(int64) { j.add("delivered") }

func (j *orderJournal) add(s string) {
	j.mu.Lock()
	j.steps = append(j.steps, s)
	j.mu.Unlock()
}

func (j *orderJournal) snapshot() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.steps...)
}

// orderGroupJournal is an orderJournal that journals a handler call's outputs
// as one group (pump.GroupJournal).
type orderGroupJournal struct{ *orderJournal }

func (j orderGroupJournal) RecordGroup(rs []pump.Record) []int64 {
	seqs := make([]int64, len(rs))
	for i, r := range rs {
		seqs[i] = j.RecordSeq(r)
	}
	return seqs
}

// TestAfterJournalRunsOnceOutputsAreJournaled: what a handler registers
// with AfterJournal runs once, after the records of its outputs (and what
// the pump journals about a failure) are journaled, whatever the handler
// returned; without a journal, once its outputs were processed.
func TestAfterJournalRunsOnceOutputsAreJournaled(t *testing.T) {
	for _, tc := range []struct {
		name string
		// group journals with a GroupJournal (a turn for SendAll).
		group  bool
		handle func() (xmlpipe.Response, error)
		// after is the record the hook must follow ("": none).
		after string
	}{
		{"respond", false, func() (xmlpipe.Response, error) { return xmlpipe.Respond(&Pong{Text: "a"}), nil },
			"record message echo>client"},
		{"respond group", true, func() (xmlpipe.Response, error) { return xmlpipe.Respond(&Pong{Text: "a"}), nil },
			"record message echo>client"},
		{"send all", true, func() (xmlpipe.Response, error) {
			return xmlpipe.SendAll(&xmlpipe.SendResponse{To: "sink", Payload: &Pong{Text: "1"}},
				&xmlpipe.SendResponse{To: "sink", Payload: &Pong{Text: "2"}}), nil
		}, "record message echo>sink"},
		{"error", false, func() (xmlpipe.Response, error) { return nil, errors.New("told to fail") }, "record huh core>client"},
		{"panic", false, func() (xmlpipe.Response, error) { panic("told to panic") }, "record huh core>client"},
		{"nothing", false, func() (xmlpipe.Response, error) { return nil, nil }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			oj := &orderJournal{}
			var j pump.Journal = oj
			if tc.group {
				j = orderGroupJournal{oj}
			}
			var runs atomic.Int32
			ran := make(chan struct{})
			echo := listenerOf(t, "echo", func(ctx context.Context, _ *Ping, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
				pump.AfterJournal(ctx, func() {
					oj.add("hook")
					if runs.Add(1) == 1 {
						close(ran)
					}
				})
				return tc.handle()
			})
			sinkL := listenerOf(t, "sink", func(context.Context, *Pong, xmlpipe.Metadata) (xmlpipe.Response, error) {
				return &xmlpipe.AwaitResponse{}, nil
			})
			p := startPump(t, pump.Options{Journal: j}, echo, sinkL)
			mustSend(t, p, client, "echo", &Ping{Text: "x"}, nil)
			select {
			case <-ran:
			case <-time.After(waitTimeout):
				t.Fatalf("the hook never ran; journal: %q", oj.snapshot())
			}
			steps := oj.snapshot()
			hook, last := -1, -1
			for i, s := range steps {
				switch s {
				case "hook":
					hook = i
				case tc.after:
					last = i
				}
			}
			if tc.after != "" && (last < 0 || last > hook) {
				t.Fatalf("the hook ran before %q: %q", tc.after, steps)
			}
			if tc.name == "send all" {
				n := 0
				for _, s := range steps[:hook] {
					if s == tc.after {
						n++
					}
				}
				if n != 2 {
					t.Fatalf("the hook ran after %d of the 2 sends were journaled: %q", n, steps)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			defer cancel()
			if err := p.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			if n := runs.Load(); n != 1 {
				t.Fatalf("the hook ran %d times", n)
			}
		})
	}
	t.Run("no journal", func(t *testing.T) {
		// Without a journal the hook runs where it would run with one:
		// after the handler returned and its answer was processed (the
		// client got it), never inside the handler.
		ranInside := make(chan bool, 1)
		var replied atomic.Bool
		hook := make(chan bool, 1)
		echo := listenerOf(t, "echo", func(ctx context.Context, _ *Ping, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
			ran := false
			pump.AfterJournal(ctx, func() {
				ran = true
				hook <- replied.Load()
			})
			ranInside <- ran
			return xmlpipe.Respond(&Pong{Text: "a"}), nil
		})
		p := startPump(t, pump.Options{}, echo)
		mustSend(t, p, client, "echo", &Ping{Text: "x"}, pump.OutletFunc(func(ev pump.Event) {
			if ev.Kind == pump.EventReply {
				replied.Store(true)
			}
		}))
		if <-ranInside {
			t.Fatal("without a journal the hook ran inside the handler")
		}
		select {
		case afterReply := <-hook:
			if !afterReply {
				t.Fatal("without a journal the hook ran before the handler's answer was processed")
			}
		case <-time.After(waitTimeout):
			t.Fatal("without a journal the hook never ran")
		}
	})
}

// TestAfterJournalDroppedWithTheHandling: what a handling that Halt
// interrupted registered never runs (nothing it returned is journaled);
// the handling that runs after Unhalt registers its own, which runs once.
// The same holds without a journal.
func TestAfterJournalDroppedWithTheHandling(t *testing.T) {
	for _, withJournal := range []bool{true, false} {
		t.Run(journalName(withJournal), func(t *testing.T) {
			var first, second atomic.Int32
			var calls atomic.Int32
			started, returned, ran := make(chan struct{}), make(chan struct{}), make(chan struct{})
			echo := listenerOf(t, "echo", func(ctx context.Context, _ *Ping, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
				if calls.Add(1) == 1 {
					pump.AfterJournal(ctx, func() { first.Add(1) })
					close(started)
					<-ctx.Done()
					defer close(returned)
					return xmlpipe.Respond(&Pong{Text: "discarded"}), nil
				}
				pump.AfterJournal(ctx, func() {
					if second.Add(1) == 1 {
						close(ran)
					}
				})
				return xmlpipe.Respond(&Pong{Text: "b"}), nil
			})
			p := startPump(t, journalOpts(withJournal), echo)
			mustSend(t, p, client, "echo", &Ping{Text: "x"}, nil)
			haltWhenStarted(t, p, started)
			await(t, returned, "the halted handler never returned")
			p.Unhalt()
			select {
			case <-ran:
			case <-time.After(waitTimeout):
				t.Fatalf("the second handling's hook never ran")
			}
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			defer cancel()
			if err := p.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			if n, m := first.Load(), second.Load(); n != 0 || m != 1 {
				t.Fatalf("the halted handling's hook ran %d times, the second's %d; want 0 and 1", n, m)
			}
		})
	}
}

// TestAfterJournalOrRunsDroppedInstead: a handling that Halt interrupted
// runs the dropped function it registered with AfterJournalOr, once, and
// never its fn; the handling after Unhalt runs its fn, never its dropped
// one; one registered after the handler returned is dropped at once. The
// same holds without a journal.
func TestAfterJournalOrRunsDroppedInstead(t *testing.T) {
	for _, withJournal := range []bool{true, false} {
		t.Run(journalName(withJournal), func(t *testing.T) {
			var fn1, drop1, fn2, drop2, late atomic.Int32
			var calls atomic.Int32
			started, dropped, ran := make(chan struct{}), make(chan struct{}), make(chan struct{})
			lateCtx := make(chan context.Context, 1)
			echo := listenerOf(t, "echo", func(ctx context.Context, _ *Ping, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
				if calls.Add(1) == 1 {
					close(started)
					<-ctx.Done()
					pump.AfterJournalOr(ctx, func() { fn1.Add(1) }, func() {
						if drop1.Add(1) == 1 {
							close(dropped)
						}
					})
					return xmlpipe.Respond(&Pong{Text: "discarded"}), nil
				}
				pump.AfterJournalOr(ctx, func() {
					if fn2.Add(1) == 1 {
						close(ran)
					}
				}, func() { drop2.Add(1) })
				lateCtx <- ctx
				return xmlpipe.Respond(&Pong{Text: "b"}), nil
			})
			p := startPump(t, journalOpts(withJournal), echo)
			mustSend(t, p, client, "echo", &Ping{Text: "x"}, nil)
			haltWhenStarted(t, p, started)
			await(t, dropped, "the halted handling's dropped function never ran")
			p.Unhalt()
			select {
			case <-ran:
			case <-time.After(waitTimeout):
				t.Fatalf("the second handling's hook never ran")
			}
			lateDrop := make(chan struct{})
			pump.AfterJournalOr(<-lateCtx, func() { late.Add(1) }, func() { close(lateDrop) })
			select {
			case <-lateDrop:
			default:
				t.Fatal("a function registered after the handler returned was not dropped at once")
			}
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			defer cancel()
			if err := p.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			got := [...]int32{fn1.Load(), drop1.Load(), fn2.Load(), drop2.Load(), late.Load()}
			if got != [...]int32{0, 1, 1, 0, 0} {
				t.Fatalf("halted handling: fn %d, dropped %d; second: fn %d, dropped %d; late fn %d; want 0 1 1 0 0",
					got[0], got[1], got[2], got[3], got[4])
			}
		})
	}
}

// await waits for ch to be closed, failing the test with failure after
// waitTimeout.
func await(t *testing.T, ch <-chan struct{}, failure string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitTimeout):
		t.Fatal(failure)
	}
}

// haltWhenStarted halts p once the handler has closed started.
func haltWhenStarted(t *testing.T, p *pump.Pump, started <-chan struct{}) {
	t.Helper()
	await(t, started, "the handler never ran")
	if _, err := p.Halt(pump.HaltAll); err != nil {
		t.Fatal(err)
	}
}

// journalOpts is the pump's options with an orderJournal (withJournal) or
// no journal.
func journalOpts(withJournal bool) pump.Options {
	if withJournal {
		return pump.Options{Journal: &orderJournal{}}
	}
	return pump.Options{}
}

// journalName names a subtest run with or without a journal.
func journalName(withJournal bool) string {
	if withJournal {
		return "journal"
	}
	return "no journal"
}
