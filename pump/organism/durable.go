package organism

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/registry"
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

// RetentionPolicy returns the store retention function of cfg: the
// retention of the entries of a listener journaled under a profile.
//
//   - Under a profile with a retention: that retention, combined with the
//     listener's own when it sets one, so that an entry is pruned only when
//     both would prune it (store.Either: the longer retention wins). A
//     thread's profile may be an intersection ("a&b"): every term's
//     retention counts the same way. journal.retention, the organism-wide
//     default, does not apply: the profile's is the more specific.
//   - Otherwise (no profile, a profile without retention, an entry
//     journaled before the journal recorded profiles): the listener's
//     retention, else journal.retention, as before profiles.
func RetentionPolicy(cfg *config.Organism) store.RetentionFunc {
	return func(listener, profile string) store.Retention {
		var r store.Retention
		found := false
		for _, term := range registry.ProfileTerms(profile) {
			p, ok := cfg.Profiles[term]
			if !ok || p.Retention.IsZero() {
				continue
			}
			if pr := storeRetention(p.Retention); !found {
				r, found = pr, true
			} else {
				r = store.Either(r, pr)
			}
		}
		if !found {
			return storeRetention(cfg.RetentionFor(listener))
		}
		if l, ok := cfg.Listener(listener); ok && !l.Retention.IsZero() {
			r = store.Either(r, storeRetention(l.Retention))
		}
		return r
	}
}

// storeRetention converts a configured retention to the store's.
func storeRetention(r config.Retention) store.Retention {
	return store.Retention{Policy: string(r.Policy), Days: r.Days, Window: r.Window.D()}
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
			// listener's or a profile's retention changed by a reload applies
			// from the next sweep, to the entries already journaled too.
			policy := func(listener, profile string) store.Retention {
				return RetentionPolicy(o.CurrentConfig())(listener, profile)
			}
			// One sweep now, before the organism takes messages of its own:
			// what the retention no longer keeps is pruned when a data
			// directory is opened, not an interval later. Sweeps walk from
			// their cursors, so this reads only what was journaled or
			// expired since the last one. A failure is logged; the sweeper
			// tries again.
			if n, err := d.store.Sweep(context.Background(), policy); err != nil {
				o.log.Error("organism: retention sweep at start", "deleted", n, "error", err)
			}
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
