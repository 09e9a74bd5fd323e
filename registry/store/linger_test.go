package store

import (
	"context"
	"testing"
	"time"
)

// lingerOptions make every batch nobody waits for linger for an hour: a
// test that needs its commit would time out unless something ends the
// lingering.
var lingerOptions = Options{BatchDelay: time.Millisecond, BatchLinger: time.Hour}

// TestBatchLingersWhenNobodyWaits: an asynchronous append nobody waits for
// is not committed when the batch delay ends but gathered on (BatchLinger);
// a WaitCommitted caller that comes meanwhile ends the lingering, without
// hurrying the writer otherwise.
func TestBatchLingersWhenNobodyWaits(t *testing.T) {
	s, _ := openTest(t, lingerOptions)
	seq, err := s.AppendSeq(testEntry(0, "t"))
	must(t, err)
	// Many batch delays pass; a writer that did not linger would commit.
	deadline := time.Now().Add(300 * time.Millisecond)
	for time.Now().Before(deadline) {
		if s.Durable() >= seq {
			t.Fatalf("seq %d committed after %s of a one-hour linger", seq, 300*time.Millisecond)
		}
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	must(t, s.WaitCommitted(ctx, seq))
	if s.Durable() < seq {
		t.Fatalf("Durable = %d after WaitCommitted(%d)", s.Durable(), seq)
	}
}

// TestWaitedBatchesDoNotLinger: a batch somebody waits for commits when its
// batch delay ends (WaitCommitted, an extension write told of its outcome)
// or at once (WaitDurable), however long batches may linger; with
// BatchLinger at BatchDelay nothing lingers.
func TestWaitedBatchesDoNotLinger(t *testing.T) {
	toldWrite := func(ctx context.Context, s *Store, _ int64) error {
		done := make(chan error, 1)
		if err := s.WriteAsync("told", func(*Tx) error { return nil }, func(err error) { done <- err }); err != nil {
			return err
		}
		select {
		case err := <-done:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for _, tt := range []struct {
		name string
		opts Options
		// lingering: wait until the writer lingers before waiting.
		lingering bool
		wait      func(ctx context.Context, s *Store, seq int64) error
	}{
		{"WaitCommitted", lingerOptions, false, func(ctx context.Context, s *Store, seq int64) error {
			return s.WaitCommitted(ctx, seq)
		}},
		{"WaitDurable", lingerOptions, false, func(ctx context.Context, s *Store, seq int64) error {
			return s.WaitDurable(ctx, seq)
		}},
		{"told write", lingerOptions, false, toldWrite},
		{"told write while lingering", lingerOptions, true, toldWrite},
		{"WaitCommitted while lingering", lingerOptions, true, func(ctx context.Context, s *Store, seq int64) error {
			return s.WaitCommitted(ctx, seq)
		}},
		{"linger off", Options{BatchDelay: time.Millisecond, BatchLinger: time.Millisecond}, false,
			func(ctx context.Context, s *Store, seq int64) error {
				for s.Durable() < seq {
					if err := ctx.Err(); err != nil {
						return err
					}
					time.Sleep(time.Millisecond)
				}
				return nil
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := openTest(t, tt.opts)
			seq, err := s.AppendSeq(testEntry(0, "t"))
			must(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			for tt.lingering && !s.dur.lingering.Load() {
				if ctx.Err() != nil {
					t.Fatal("the writer never lingered over an append nobody waits for")
				}
				time.Sleep(time.Millisecond)
			}
			must(t, tt.wait(ctx, s, seq))
			if s.Durable() < seq {
				t.Fatalf("Durable = %d, want at least %d", s.Durable(), seq)
			}
		})
	}
}
