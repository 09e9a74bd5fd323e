package organism

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// durable is the organism's durable kernel: the store, whether the organism
// owns it, and the retention sweeper.
type durable struct {
	store   *store.Store
	owned   bool
	journal bool
	cfg     *config.Organism
	log     *slog.Logger

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
	if d.journal && opts.Journal == nil {
		opts.Journal = storeJournal{s: d.store, log: opts.Logger}
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

// startDurable re-delivers the journaled messages whose handling had not
// finished (Recover) and starts the retention sweeper. It runs after the
// pump started and before the boot message.
func (o *Organism) startDurable() error {
	d := o.durable
	if d == nil {
		return nil
	}
	if d.journal {
		n, skipped, err := o.recoverUndelivered()
		if err != nil {
			return fmt.Errorf("organism: recover: %w", err)
		}
		if n > 0 || skipped > 0 {
			o.log.Info("recovered undelivered messages from the journal", "redelivered", n, "already handled", skipped)
		}
		interval := d.cfg.Journal.SweepInterval.D()
		if interval > 0 {
			stop, err := d.store.StartSweeper(context.Background(), interval, RetentionPolicy(d.cfg))
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

// recoverUndelivered hands every journaled message that reached a listener
// and was never marked delivered to Pump.Recover, in journal order. A message
// whose listener's output is already journaled later in its conversation had
// been handled (only its mark was lost): it is marked delivered instead.
func (o *Organism) recoverUndelivered() (redelivered, skipped int, err error) {
	s := o.durable.store
	entries, err := s.Undelivered()
	if err != nil {
		return 0, 0, err
	}
	convs := map[string][]store.Entry{}
	for _, e := range entries {
		later, ok := convs[e.Conversation]
		if !ok && e.Conversation != "" {
			if later, err = s.Conversation(e.Conversation); err != nil {
				return redelivered, skipped, err
			}
			convs[e.Conversation] = later
		}
		if answered(e, later) {
			skipped++
			if err := s.MarkDelivered(e.Seq); err != nil {
				return redelivered, skipped, err
			}
			continue
		}
		err := o.Pump.Recover(context.Background(), pump.Recovered{Seq: e.Seq, Envelope: e.Bytes,
			External: e.Direction == store.Inbound, Conversation: e.Conversation, Thread: e.Thread})
		switch {
		case errors.Is(err, pump.ErrRecoverEnded):
			skipped++
		case err != nil:
			return redelivered, skipped, err
		default:
			redelivered++
		}
	}
	return redelivered, skipped, nil
}

// answered reports whether conv holds, after e, a message sent by the
// listener e reached: its handler ran and its output was journaled.
func answered(e store.Entry, conv []store.Entry) bool {
	for _, c := range conv {
		if c.Seq > e.Seq && strings.EqualFold(c.From, e.Listener) {
			return true
		}
	}
	return false
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
