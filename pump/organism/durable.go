package organism

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// durable is the organism's durable kernel: the store, whether the organism
// owns it, and the retention sweeper.
type durable struct {
	store   *store.Store
	owned   bool
	journal bool
	// calls records the LLM calls in the store; the store journal links
	// them to the envelopes they produced.
	calls *callBook
	cfg   *config.Organism
	log   *slog.Logger

	mu        sync.Mutex
	stopSweep func()
	closed    bool
}

// openDurable opens the store of opts.DataDir (or takes opts.Store) and, when
// journal.enabled, installs the store journal as opts.Journal (unless one is
// given). It returns nil for an in-memory organism.
func openDurable(cfg *config.Organism, opts *Options) (*durable, error) {
	if opts.Store == nil && opts.DataDir == "" {
		return nil, nil
	}
	d := &durable{store: opts.Store, cfg: cfg, log: opts.Logger, journal: cfg.Journal.Enabled}
	if d.store == nil {
		s, err := store.Open(opts.DataDir, store.Options{Clock: opts.Clock, Logger: opts.Logger})
		if err != nil {
			return nil, fmt.Errorf("organism: data directory: %w", err)
		}
		d.store, d.owned = s, true
	}
	d.calls = newCallBook(d.store, opts.Logger)
	if d.journal && opts.Journal == nil {
		opts.Journal = storeJournal{s: d.store, log: opts.Logger, calls: d.calls}
	}
	return d, nil
}

// Store returns the organism's durable store (nil for an in-memory organism).
func (o *Organism) Store() *store.Store {
	if o.durable == nil {
		return nil
	}
	return o.durable.store
}

// RetentionPolicy returns the store retention function of cfg: each
// listener's retention, else journal.retention.
func RetentionPolicy(cfg *config.Organism) store.RetentionFunc {
	return func(listener string) store.Retention {
		r := cfg.RetentionFor(listener)
		return store.Retention{Policy: string(r.Policy), Days: r.Days}
	}
}

// startDurable starts re-delivering, in the background, the journaled
// messages whose handling had not finished (recovery.go) and starts the
// retention sweeper. It runs after the pump started and before the boot
// message.
func (o *Organism) startDurable() error {
	d := o.durable
	if d == nil {
		return nil
	}
	if d.journal {
		o.startRecovery()
		interval := d.cfg.Journal.SweepInterval.D()
		if interval > 0 {
			// Each sweep reads the retention of the configuration in force: a
			// listener's retention changed by a reload applies from its next
			// sweep.
			policy := func(listener string) store.Retention { return RetentionPolicy(o.CurrentConfig())(listener) }
			stop, err := d.store.StartSweeper(context.Background(), interval, policy)
			if err != nil {
				return fmt.Errorf("organism: retention sweeper: %w", err)
			}
			d.mu.Lock()
			d.stopSweep = stop
			d.mu.Unlock()
		}
	}
	return nil
}

// close stops the sweeper and closes an owned store (after the pump drained,
// so every record is committed). A borrowed store is flushed only.
func (d *durable) close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	if d.stopSweep != nil {
		d.stopSweep()
	}
	if !d.owned {
		return d.store.Flush(context.Background())
	}
	return d.store.Close()
}
