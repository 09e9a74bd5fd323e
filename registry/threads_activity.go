package registry

import "time"

// ActivitySink is a ThreadSink that also keeps each thread's last activity
// (ThreadRecord.Touched), so that a restart restores how long a thread has
// been idle and its TTL runs on from there. The store implements it.
type ActivitySink interface {
	ThreadSink
	// ThreadsTouched is called with the records of live threads used
	// since their last report (SaveActivity).
	ThreadsTouched(recs []ThreadRecord)
}

// SaveActivity tells the sink, when it is an ActivitySink, the record of
// every live thread used after since and after its creation (a thread's
// creation already told it), and returns how many it told. It costs
// nothing per message: the pump calls it from its periodic sweep and once
// more when it stops. The records are queued behind the registry's earlier
// notifications, so a thread's end is never overtaken by its activity.
func (t *Threads) SaveActivity(since time.Time) int {
	if _, ok := t.cfg.Sink.(ActivitySink); !ok {
		return 0
	}
	cutoff := since.UnixNano()
	n := 0
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		var recs []ThreadRecord
		for _, r := range s.nodes {
			nd := s.slab.at(r)
			// A thread marked in the instant it was created is told
			// too: its creation told no mark.
			if at := nd.touched.Load(); at > cutoff && (at > nd.created || nd.marks != 0) {
				recs = append(recs, s.record(r))
			}
		}
		queued := len(recs) > 0
		if queued {
			s.pending = append(s.pending, threadEvent{touched: recs})
			s.queued++
		}
		n += len(recs)
		s.unlockAndDeliver(queued)
	}
	return n
}
