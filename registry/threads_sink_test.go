package registry

import (
	"fmt"
	"slices"
	"sync"
)

// recordingThreadSink replays ThreadSink events into the set of live ids, as
// a store would, and records every anomaly a misordered stream would cause.
type recordingThreadSink struct {
	mu       sync.Mutex
	live     map[string]ThreadRecord
	created  []string
	ended    [][]string
	problems []string
}

func newRecordingThreadSink() *recordingThreadSink {
	return &recordingThreadSink{live: make(map[string]ThreadRecord)}
}

// ThreadCreated records a created node.
func (s *recordingThreadSink) ThreadCreated(rec ThreadRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.live[rec.ID]; dup {
		s.problems = append(s.problems, fmt.Sprintf("created twice: %s", rec.ID))
	}
	if rec.Parent != "" {
		if _, ok := s.live[rec.Parent]; !ok {
			s.problems = append(s.problems, fmt.Sprintf("created %s under dead parent %s", rec.ID, rec.Parent))
		}
	}
	s.live[rec.ID] = rec
	s.created = append(s.created, rec.ID)
}

// ThreadsEnded records ended nodes.
func (s *recordingThreadSink) ThreadsEnded(ids []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		if _, ok := s.live[id]; !ok {
			s.problems = append(s.problems, fmt.Sprintf("ended before created: %s", id))
		}
		delete(s.live, id)
	}
	s.ended = append(s.ended, slices.Clone(ids))
}

// liveIDs returns the ids the sink believes are live, sorted.
func (s *recordingThreadSink) liveIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.live))
	for id := range s.live {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// endedIDs returns every ended id in order.
func (s *recordingThreadSink) endedIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Concat(s.ended...)
}

// issues returns the anomalies seen.
func (s *recordingThreadSink) issues() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.problems)
}
