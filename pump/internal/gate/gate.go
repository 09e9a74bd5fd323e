// Package gate holds back callbacks until the journal entries they name are
// durable, and runs them in the order they were submitted.
//
// The pump journals an envelope (the store commits it in a later group
// commit) and then tells transports about it. A client must never hear of an
// envelope that a crash could still lose, so the pump hands each
// notification to a Gate with the journal seq it depends on; the Gate's one
// goroutine waits for that seq to be committed and runs the notifications
// strictly in submission order, so a conversation's events keep their order.
package gate

import (
	"context"
	"log/slog"
	"sync"
)

// WaitFunc returns once journal seq, and every seq before it, is committed.
// An error says seq itself failed (or the journal closed); the callbacks
// waiting on it run anyway, since the entries they name may be others.
type WaitFunc func(ctx context.Context, seq int64) error

// item is one held callback.
type item struct {
	seq int64
	fn  func()
}

// Gate runs callbacks once their seq is durable, in submission order. The
// zero value is not usable; call New.
type Gate struct {
	wait WaitFunc
	log  *slog.Logger

	mu      sync.Mutex
	queue   []item
	spare   []item
	running bool
	closing bool
	kick    chan struct{}
	stopped chan struct{}
	// confirmed is the highest seq known durable (the goroutine's own).
	confirmed int64
}

// New returns a Gate that waits with wait and logs failed waits to log.
func New(wait WaitFunc, log *slog.Logger) *Gate {
	if log == nil {
		log = slog.Default()
	}
	return &Gate{wait: wait, log: log, kick: make(chan struct{}, 1), stopped: make(chan struct{})}
}

// After runs fn on the Gate's goroutine once seq is durable and every
// callback submitted before it has run. A seq ≤ 0 waits for nothing but
// keeps the order. After Close, fn runs at once on the caller's goroutine.
func (g *Gate) After(seq int64, fn func()) {
	g.mu.Lock()
	if g.closing {
		g.mu.Unlock()
		fn()
		return
	}
	g.queue = append(g.queue, item{seq: seq, fn: fn})
	if !g.running {
		g.running = true
		go g.run()
	}
	g.mu.Unlock()
	select {
	case g.kick <- struct{}{}:
	default: // the goroutine is already due to look
	}
}

// Close runs what is held (still waiting for durability) and stops the
// goroutine; it returns once every callback submitted before it has run.
func (g *Gate) Close() {
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

// Pending returns the number of callbacks not yet run.
func (g *Gate) Pending() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.queue)
}

// run is the Gate's goroutine: it takes the held callbacks a batch at a
// time and runs each once its seq is durable.
func (g *Gate) run() {
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
			batch[i].fn()
			batch[i] = item{}
		}
		g.mu.Lock()
		g.spare = batch[:0]
		g.mu.Unlock()
	}
}
