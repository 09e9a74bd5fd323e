package store

import (
	"runtime"
	"testing"
)

// TestBacklogCountsBlockedWrites: an asynchronous write that finds the
// queue full waits for room and is counted; the peak backlog is the
// queue's capacity.
func TestBacklogCountsBlockedWrites(t *testing.T) {
	s, _ := openTest(t, Options{BatchRows: 1, QueueSize: 1})
	started, release := make(chan struct{}), make(chan struct{})
	must(t, s.async("block", func(*writer) (int64, error) {
		close(started)
		<-release
		return 0, nil
	}))
	<-started
	must(t, s.Append(testEntry(1, "t"))) // fills the queue
	done := make(chan error)
	// An append, not a delivery mark: marks wait in their buffer (marks.go).
	go func() { done <- s.Append(testEntry(2, "t")) }() // waits for room
	for s.Backlog().Blocked == 0 {
		select {
		case err := <-done:
			close(release)
			t.Fatalf("Append returned (%v) while the queue was full", err)
		default:
			runtime.Gosched()
		}
	}
	close(release)
	must(t, <-done)
	flush(t, s)
	b := s.Backlog()
	if b.Blocked != 1 || b.Capacity != 1 || b.Peak < 1 {
		t.Fatalf("Backlog = %+v, want 1 blocked write, capacity 1", b)
	}
}
