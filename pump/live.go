package pump

import (
	"context"
	"fmt"
	"slices"
)

// startWorkers starts l's workers and counts l among the live listeners
// (those whose pipeline Shutdown closes).
func (p *Pump) startWorkers(l *listener) {
	if len(l.current) != l.Workers {
		l.current = make([]workerSlot, l.Workers)
	}
	p.noteTimeout(l.timeout)
	p.liveMu.Lock()
	if p.live == nil {
		p.live = map[*listener]struct{}{}
	}
	p.live[l] = struct{}{}
	p.liveMu.Unlock()
	p.haltMu.Lock()
	if p.haltedFor(l) {
		l.queue.setHalted(true) // added while halted
	}
	p.haltMu.Unlock()
	for i := 0; i < l.Workers; i++ {
		p.wg.Add(1)
		l.workers.Add(1)
		go p.runWorker(l, &l.current[i])
	}
}

// retireListener closes the pipeline of a listener that no live routing
// snapshot holds any more: its workers handle what is queued and stop.
func (p *Pump) retireListener(l *listener) {
	l.queue.close()
	p.liveMu.Lock()
	delete(p.live, l)
	p.liveMu.Unlock()
}

// liveListeners returns every listener whose workers may still run: the
// current snapshot's and the removed ones still serving the conversations
// that pinned an older snapshot.
func (p *Pump) liveListeners() []*listener {
	p.liveMu.Lock()
	defer p.liveMu.Unlock()
	out := make([]*listener, 0, len(p.live))
	for l := range p.live {
		out = append(out, l)
	}
	return out
}

// AddListener registers l, also while the pump runs (before Start it is
// Register). On a running pump the listener's workers start at once and
// every conversation that starts from now on may reach it; a conversation
// already running keeps the routing table it started with and does not see
// it (seed 000 §8.5). The registration rules of Register apply, and system
// names stay reserved. Other agents' usage instructions are not rebuilt.
func (p *Pump) AddListener(l Listener) error {
	if !p.started.Load() {
		return p.Register(l)
	}
	if p.closing.Load() {
		return ErrClosed
	}
	rl := p.newListener(l)
	p.buildUsage(rl)
	rl.current = make([]workerSlot, rl.Workers) // before Listeners can see it
	// The workers start before the snapshot holding rl is published: a
	// message routed to rl then always finds them.
	p.startWorkers(rl)
	err := p.editRoutes(func(t *table) (*table, error) { return t.with(rl, false) })
	if err != nil {
		p.retireListener(rl) // never reachable: its idle workers stop
		return err
	}
	if p.closing.Load() {
		rl.queue.close() // Shutdown began meanwhile and may have missed it
	}
	p.log.Info("listener added", "listener", rl.Name, "workers", rl.Workers)
	return nil
}

// RemoveListener unregisters name from a running pump: from now on no new
// conversation routes to it (one that sends to it gets the routing error of
// an unknown listener), while the conversations already running keep the
// routing table they started with and may still reach it until they
// complete (seed 000 §8.5); a paused listener is resumed to serve them, as
// no name reaches it any more. It returns once those conversations are done
// with it and its running handlers have finished — or when ctx ends, with
// ctx's error (the listener is gone from the table either way; its workers
// finish in the background). The organism's own system.* listeners cannot
// be removed.
func (p *Pump) RemoveListener(ctx context.Context, name string) error {
	var l *listener
	err := p.editRoutes(func(t *table) (*table, error) {
		nt, removed, err := t.without(name)
		l = removed
		return nt, err
	})
	if err != nil {
		return err
	}
	if !p.started.Load() {
		return nil
	}
	p.resumeRemoved(l)
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
		return fmt.Errorf("remove %s: waiting for the conversations and handlers using it: %w", l.Name, ctx.Err())
	}
}

// AddPeers lets the agent called agent address names too, from its next
// message on: its peers list grows and its usage instructions are rebuilt
// with their schemas (a federation gateway's import learnt after start,
// when the agent's peers name the gateway). Names it has already are
// skipped.
func (p *Pump) AddPeers(agent string, names ...string) error {
	l := p.routes.Load().lookup(agent)
	if l == nil {
		return fmt.Errorf("%w: %s", ErrUnknownListener, agent)
	}
	if !l.Agent {
		return fmt.Errorf("%w: %s is not an agent (it may address anyone)", ErrBadListener, agent)
	}
	p.peersMu.Lock()
	defer p.peersMu.Unlock()
	ps := l.peerset.Load()
	all := append([]string(nil), ps.names...)
	for _, n := range names {
		if !ps.set[lower(n)] {
			all = append(all, n)
		}
	}
	if len(all) == len(ps.names) {
		return nil
	}
	l.peerset.Store(agentPeerSet(l, p.routes.Load(), all))
	p.log.Info("agent peers added", "listener", l.Name, "peers", names)
	return nil
}

// RebuildPeers gives every agent whose peers name one of names its peers
// and usage instructions anew from the routing table as it is now, from
// its next message on: for listeners replaced or removed by a Change that
// did not replace the agent (a federation import whose peer changed its
// schema, or stopped exporting it), whose agents would otherwise go on
// describing and encoding calls by the old contract.
func (p *Pump) RebuildPeers(names ...string) {
	p.peersMu.Lock()
	defer p.peersMu.Unlock()
	t := p.routes.Load()
	for _, l := range t.order {
		ps := l.peerset.Load()
		if !l.Agent || ps == nil || !slices.ContainsFunc(names, func(n string) bool { return ps.set[lower(n)] }) {
			continue
		}
		l.peerset.Store(agentPeerSet(l, t, ps.names))
	}
}

// resumeRemoved lifts the pause of l, a listener taken out of the routing
// table without a replacement: Resume cannot reach it by name any more, so
// the conversations that pinned it would otherwise wait in its queue
// forever (and it would never retire).
func (p *Pump) resumeRemoved(l *listener) {
	if l.queue.setPaused(false) {
		p.log.Info("removed listener resumed to finish the conversations using it", "listener", l.Name,
			"queued", l.queue.len())
	}
}
