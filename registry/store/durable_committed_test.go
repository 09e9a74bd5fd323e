package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestWaitCommittedForcesNoCommit: WaitCommitted leaves the batch delay
// alone — with one of an hour its entry stays uncommitted while it waits —
// and returns once a commit somebody forces (WaitDurable of a later seq)
// carries its entry.
func TestWaitCommittedForcesNoCommit(t *testing.T) {
	s, _ := openTest(t, Options{BatchDelay: time.Hour})
	seq, err := s.AppendSeq(testEntry(0, "lazy"))
	must(t, err)
	waited := make(chan error, 1)
	go func() { waited <- s.WaitCommitted(context.Background(), seq) }()
	short, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := s.WaitCommitted(short, seq); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitCommitted with nobody forcing a commit: %v, want the deadline", err)
	}
	if s.Durable() >= seq {
		t.Fatalf("Durable = %d: WaitCommitted forced the commit of %d", s.Durable(), seq)
	}
	next, err := s.AppendSeq(testEntry(1, "forced"))
	must(t, err)
	ctx, cancel2 := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel2()
	must(t, s.WaitDurable(ctx, next))
	select {
	case err := <-waited:
		must(t, err)
	case <-ctx.Done():
		t.Fatal("WaitCommitted did not return after the commit that carried its entry")
	}
}
