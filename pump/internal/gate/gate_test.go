package gate

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// journal is a fake journal whose commits the test makes by hand.
type journal struct {
	mu      sync.Mutex
	durable int64
	advance chan struct{}
	failed  map[int64]bool
}

func newJournal() *journal { return &journal{advance: make(chan struct{}), failed: map[int64]bool{}} }

// commit makes every seq up to seq durable.
func (j *journal) commit(seq int64) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.durable = seq
	close(j.advance)
	j.advance = make(chan struct{})
}

func (j *journal) wait(ctx context.Context, seq int64) error {
	for {
		j.mu.Lock()
		d, ch, failed := j.durable, j.advance, j.failed[seq]
		j.mu.Unlock()
		if d >= seq {
			if failed {
				return errors.New("append failed")
			}
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// recorder collects what ran and signals each run.
type recorder struct {
	mu  sync.Mutex
	ran []int
	sig chan int
}

func (r *recorder) fn(i int) func() {
	return func() {
		r.mu.Lock()
		r.ran = append(r.ran, i)
		r.mu.Unlock()
		r.sig <- i
	}
}

// Funcs returns a Gate of callbacks: each runs as it is let through.
func Funcs(wait WaitFunc, log *slog.Logger) *Gate[func()] {
	return New(wait, func(fn func()) { fn() }, log)
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestGateHoldsUntilDurableInOrder: nothing runs before its seq commits,
// and callbacks run in submission order even when a later one names an
// earlier seq.
func TestGateHoldsUntilDurableInOrder(t *testing.T) {
	j := newJournal()
	g := Funcs(j.wait, quiet())
	r := &recorder{sig: make(chan int, 10)}
	g.After(2, r.fn(1))
	g.After(1, r.fn(2)) // an earlier seq behind a later one: keeps its place
	g.After(0, r.fn(3)) // no seq of its own: keeps its place
	g.After(4, r.fn(4))
	select {
	case i := <-r.sig:
		t.Fatalf("callback %d ran before anything was durable", i)
	default:
	}
	j.commit(2)
	for _, want := range []int{1, 2, 3} {
		if got := <-r.sig; got != want {
			t.Fatalf("ran %d, want %d", got, want)
		}
	}
	select {
	case i := <-r.sig:
		t.Fatalf("callback %d ran while its seq 4 was not durable", i)
	default:
	}
	j.commit(4)
	if got := <-r.sig; got != 4 {
		t.Fatalf("ran %d, want 4", got)
	}
	g.Close()
	g.After(9, r.fn(5)) // after Close: inline
	if diff := cmp.Diff([]int{1, 2, 3, 4, 5}, r.ran); diff != "" {
		t.Fatalf("run order (-want +got):\n%s", diff)
	}
}

// TestGateCloseDrains: Close returns once everything held has run, and a
// failed seq still notifies (the callbacks may name other entries).
func TestGateCloseDrains(t *testing.T) {
	j := newJournal()
	j.failed[3] = true
	g := Funcs(j.wait, quiet())
	r := &recorder{sig: make(chan int, 100)}
	for i := 1; i <= 50; i++ {
		g.After(int64(i), r.fn(i))
	}
	go j.commit(50)
	g.Close()
	if len(r.ran) != 50 {
		t.Fatalf("Close returned with %d of 50 callbacks run", len(r.ran))
	}
	for i, v := range r.ran {
		if v != i+1 {
			t.Fatalf("ran %v out of order", r.ran)
		}
	}
	Funcs(j.wait, quiet()).Close() // a gate that never ran closes at once
}

// TestGateHoldsValues: a Gate of values hands each to its run function by
// value once its seq is durable, in order, and a value held by the Gate is
// not kept once handed over (the queue's slot is cleared for reuse).
func TestGateHoldsValues(t *testing.T) {
	type ev struct {
		n    int
		body []byte
	}
	j := newJournal()
	got := make(chan ev, 10)
	g := New(j.wait, func(e ev) { got <- e }, quiet())
	g.After(1, ev{n: 1, body: []byte("a")})
	g.After(2, ev{n: 2, body: []byte("b")})
	select {
	case e := <-got:
		t.Fatalf("value %d handed over before anything was durable", e.n)
	default:
	}
	j.commit(2)
	for _, want := range []ev{{1, []byte("a")}, {2, []byte("b")}} {
		if diff := cmp.Diff(want, <-got, cmp.AllowUnexported(ev{})); diff != "" {
			t.Fatalf("handed over (-want +got):\n%s", diff)
		}
	}
	g.Close()
	for i, it := range g.spare[:cap(g.spare)] {
		if it.v.body != nil {
			t.Fatalf("queue slot %d still holds a handed-over value", i)
		}
	}
	g.After(7, ev{n: 3}) // after Close: inline
	if e := <-got; e.n != 3 {
		t.Fatalf("after Close handed over %d, want 3", e.n)
	}
}
