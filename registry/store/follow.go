package store

import (
	"context"
	"fmt"
	"time"
)

// followPage is how many entries one poll of Follow reads at most.
const followPage = 1000

// DefaultFollowInterval is the poll interval Follow uses for a zero interval.
const DefaultFollowInterval = 200 * time.Millisecond

// Follow calls fn, in seq order, for every committed entry with a seq
// greater than after: first those already committed, then new ones as they
// commit, polling every interval (DefaultFollowInterval when zero). It
// returns ctx.Err() when ctx ends, or the first error of fn or of a read.
//
// Polling After(last) sees every entry exactly once because the writer
// commits entries in seq order: once seq n is visible, every smaller seq is
// committed too (or was pruned or tombstoned, and is never visible again).
func (r *Reader) Follow(ctx context.Context, after int64, interval time.Duration, fn func(Entry) error) error {
	return follow(ctx, after, interval, r.After, func(e Entry) int64 { return e.Seq }, fn)
}

// follow is the polling loop of Follow and FollowPositions: it reads pages
// of items with a seq above after (page), calls fn for each in order, and
// when a page comes back short waits interval (DefaultFollowInterval when
// zero) before reading on.
func follow[T any](ctx context.Context, after int64, interval time.Duration,
	page func(after int64, limit int) ([]T, error), seq func(T) int64, fn func(T) error) error {
	if interval <= 0 {
		interval = DefaultFollowInterval
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		for {
			items, err := page(after, followPage)
			if err != nil {
				return fmt.Errorf("store: follow: %w", err)
			}
			for _, it := range items {
				if err := fn(it); err != nil {
					return err
				}
				after = seq(it)
			}
			if len(items) < followPage {
				break
			}
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}
