package registry

import (
	"runtime"
	"sync"
	"testing"

	"github.com/google/uuid"
)

// gatedSink blocks the first ThreadCreated until released and records every
// created id.
type gatedSink struct {
	entered, release chan struct{}
	once             sync.Once
	mu               sync.Mutex
	seen             map[string]bool
}

func (s *gatedSink) ThreadCreated(rec ThreadRecord) {
	s.once.Do(func() {
		close(s.entered)
		<-s.release
	})
	s.mu.Lock()
	s.seen[rec.ID] = true
	s.mu.Unlock()
}

func (s *gatedSink) ThreadsEnded([]string) {}

func (s *gatedSink) saw(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[id]
}

// TestBeginReturnsAfterSinkSawIt: while another goroutine is delivering (its
// sink call blocked), Begin does not return before the sink has seen the new
// thread. A durable sink must record a thread before any message travels on
// it, or a crash could leave a journaled message on an unknown thread.
func TestBeginReturnsAfterSinkSawIt(t *testing.T) {
	sink := &gatedSink{entered: make(chan struct{}), release: make(chan struct{}), seen: map[string]bool{}}
	th := newTestThreads(newFakeClock(), sink)
	// Both in one shard: each shard delivers on its own.
	first := uuid.New()
	second := inShard(uuid.New(), shardOf(first))
	shard := th.home(first)
	go func() { _ = th.Begin(first.String(), "console", "a") }()
	<-sink.entered // the first Begin is delivering, blocked in the sink

	done := make(chan bool)
	go func() {
		if err := th.Begin(second.String(), "console", "b"); err != nil {
			t.Error(err)
		}
		done <- sink.saw(second.String())
	}()
	// Release the sink only once the second Begin has queued its event.
	for {
		shard.mu.RLock()
		queued := shard.queued
		shard.mu.RUnlock()
		if queued == 2 {
			break
		}
		runtime.Gosched()
	}
	close(sink.release)
	if !<-done {
		t.Fatal("Begin returned before the sink saw the thread it created")
	}
}
