// Package gate holds back values (the pump's events, callbacks) until the
// journal entries they name are durable, and hands them over in the order
// they were submitted.
//
// The pump journals an envelope (the store commits it in a later group
// commit) and then tells transports about it. A client must never hear of an
// envelope that a crash could still lose, so the pump hands each
// notification to a Gate with the journal seq it depends on; the Gate's one
// goroutine waits for that seq to be committed and runs the notifications
// strictly in submission order, so a conversation's events keep their order.
//
// A Gate holds values of one type and hands each to the function it was
// made with, rather than holding closures: the pump's events are held by
// value in the Gate's reused queue, where a closure per event put each event
// on the heap (one allocation of ~290 bytes per event, ~8 per bus reply).
package gate

import (
	"context"
	"log/slog"
	"sync"
)

// WaitFunc returns once journal seq, and every seq before it, is committed.
// An error says seq itself failed (or the journal closed); the values
// waiting on it are handed over anyway, since the entries they name may be others.
type WaitFunc func(ctx context.Context, seq int64) error

// item is one held value.
type item[T any] struct {
	seq int64
	v   T
}

// Gate hands held values to its run function once their seq is durable, in
// submission order. The zero value is not usable; call New.
type Gate[T any] struct {
	wait WaitFunc
	run  func(T)
	log  *slog.Logger

	mu      sync.Mutex
	queue   []item[T]
	spare   []item[T]
	running bool
	closing bool
	kick    chan struct{}
	stopped chan struct{}
	// confirmed is the highest seq known durable (the goroutine's own).
	confirmed int64
}

// New returns a Gate that waits with wait, hands each held value to run and
// logs failed waits to log.
func New[T any](wait WaitFunc, run func(T), log *slog.Logger) *Gate[T] {
	if log == nil {
		log = slog.Default()
	}
	return &Gate[T]{wait: wait, run: run, log: log, kick: make(chan struct{}, 1), stopped: make(chan struct{})}
}

// After hands v to the run function on the Gate's goroutine once seq is
// durable and every value submitted before it has been handed over. A
// seq ≤ 0 waits for nothing but keeps the order. After Close, v is handed
// over at once on the caller's goroutine.
func (g *Gate[T]) After(seq int64, v T) {
	g.mu.Lock()
	if g.closing {
		g.mu.Unlock()
		g.run(v)
		return
	}
	g.queue = append(g.queue, item[T]{seq: seq, v: v})
	if !g.running {
		g.running = true
		go g.loop()
	}
	g.mu.Unlock()
	select {
	case g.kick <- struct{}{}:
	default: // the goroutine is already due to look
	}
}

// Close hands over what is held (still waiting for durability) and stops
// the goroutine; it returns once every value submitted before it has been
// handed over.
func (g *Gate[T]) Close() {
	g.mu.Lock()
	if g.closing {
		g.mu.Unlock()
		return
	}
	g.closing = true
	running := g.running
	g.mu.Unlock()
	if !running {
		return
	}
	select {
	case g.kick <- struct{}{}:
	default:
	}
	<-g.stopped
}

// Pending returns the number of values not yet handed over.
func (g *Gate[T]) Pending() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.queue)
}

// loop is the Gate's goroutine: it takes the held values a batch at a time
// and hands each over once its seq is durable.
func (g *Gate[T]) loop() {
	defer close(g.stopped)
	ctx := context.Background()
	for {
		g.mu.Lock()
		for len(g.queue) == 0 {
			if g.closing {
				g.mu.Unlock()
				return
			}
			g.mu.Unlock()
			<-g.kick
			g.mu.Lock()
		}
		batch := g.queue
		g.queue, g.spare = g.spare[:0], nil
		g.mu.Unlock()
		for i := range batch {
			if it := batch[i]; it.seq > g.confirmed {
				if err := g.wait(ctx, it.seq); err != nil {
					g.log.Warn("gate: journal entry not durable; notifying anyway", "seq", it.seq, "error", err)
				}
				g.confirmed = it.seq
			}
			g.run(batch[i].v)
			batch[i] = item[T]{} // drop what the value refers to
		}
		g.mu.Lock()
		g.spare = batch[:0]
		g.mu.Unlock()
	}
}
