package pump

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/xml-pipeline/xmlpipe/gen"
)

// startWorkers starts l's workers.
func (p *Pump) startWorkers(l *listener) {
	if len(l.current) != l.Workers {
		l.current = make([]atomic.Pointer[string], l.Workers)
	}
	for i := 0; i < l.Workers; i++ {
		p.wg.Add(1)
		l.workers.Add(1)
		go func(cur *atomic.Pointer[string]) {
			defer l.workers.Done()
			p.listenerWorker(l, cur)
		}(&l.current[i])
	}
}

// AddListener registers l, also while the pump runs (before Start it is
// Register). On a running pump the listener's workers start at once and the
// next message routed — by any conversation, new or running — may reach it;
// the registration rules of Register apply, and system names stay reserved.
// Other agents' usage instructions are not rebuilt.
func (p *Pump) AddListener(l Listener) error {
	if !p.started.Load() {
		return p.Register(l)
	}
	if p.closing.Load() {
		return ErrClosed
	}
	rl := p.newListener(l)
	if rl.Agent && len(rl.Peers) > 0 {
		rl.usage = gen.UsageInstructions(rl.Name, rl.Description, p.peersOf(rl))
	}
	rl.current = make([]atomic.Pointer[string], rl.Workers) // before Listeners can see it
	if err := p.table.add(rl, false); err != nil {
		return err
	}
	p.startWorkers(rl)
	if p.closing.Load() {
		rl.queue.close() // Shutdown began meanwhile and may have missed it
	}
	p.log.Info("listener added", "listener", rl.Name, "workers", rl.Workers)
	return nil
}

// RemoveListener unregisters name from a running pump: from now on no
// message routes to it (a conversation that sends to it gets the routing
// error of an unknown listener), the messages already queued for it are
// still handled, and it returns once its running handlers have finished —
// or when ctx ends, with ctx's error (the listener is gone from the table
// either way; its workers finish in the background). The organism's own
// system.* listeners cannot be removed.
func (p *Pump) RemoveListener(ctx context.Context, name string) error {
	l, err := p.table.remove(name)
	if err != nil {
		return err
	}
	l.queue.close()
	if !p.started.Load() {
		return nil
	}
	done := make(chan struct{})
	go func() {
		l.workers.Wait()
		close(done)
	}()
	select {
	case <-done:
		p.log.Info("listener removed", "listener", l.Name)
		return nil
	case <-ctx.Done():
		return fmt.Errorf("remove %s: waiting for its handlers: %w", l.Name, ctx.Err())
	}
}

// remove takes the listener called name out of the table.
func (t *table) remove(name string) (*listener, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.byName[lower(name)]
	switch {
	case l == nil:
		return nil, fmt.Errorf("%w: %s", ErrUnknownListener, name)
	case l.system || strings.HasPrefix(lower(l.Name), "system."):
		return nil, fmt.Errorf("%w: %q belongs to the organism", ErrReservedName, l.Name)
	}
	delete(t.byName, lower(l.Name))
	key := tagKey{l.Payload.Namespace(), l.Payload.Name()}
	var kept []*listener
	for _, o := range t.byTag[key] {
		if o != l {
			kept = append(kept, o)
		}
	}
	if len(kept) == 0 {
		delete(t.byTag, key)
	} else {
		t.byTag[key] = kept // a new slice: resolve's callers may hold the old one
	}
	order := make([]*listener, 0, len(t.order)-1)
	for _, o := range t.order {
		if o != l {
			order = append(order, o)
		}
	}
	t.order = order
	return l, nil
}
