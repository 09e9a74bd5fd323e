package pump

import (
	"fmt"
	"slices"
)

// ThreadHistories is a ThreadHistory that also looks many threads up at
// once: the journal's past of each of threads, as ThreadOrigin tells one —
// the origin of each thread it saw (a thread absent from the map was never
// seen), in one pass over the journal rather than one lookup per thread.
type ThreadHistories interface {
	ThreadHistory
	ThreadOrigins(threads []string) (map[string]string, error)
}

// ThreadOwners is ThreadOwner for each of threads, by thread: what a page
// of threads (GET /api/v1/threads) shows as each conversation's owner. The
// live registry answers first, as for one thread; the threads it does not
// know are looked up in the journal together (ThreadHistories) when it
// can, else one at a time.
func (p *Pump) ThreadOwners(threads []string) (map[string]string, error) {
	out := make(map[string]string, len(threads))
	var rest []string
	for _, t := range slices.Compact(slices.Sorted(slices.Values(threads))) {
		origin, seen := p.threads.Origin(t)
		if !seen {
			if root, ok := p.threads.EndedRoot(t); ok && root != t {
				origin, seen = p.threads.Origin(root)
			}
		}
		if seen {
			out[t] = originUser(origin)
			continue
		}
		rest = append(rest, t)
	}
	if len(rest) == 0 {
		return out, nil
	}
	h, ok := p.journal.(ThreadHistories)
	if !ok {
		for _, t := range rest {
			owner, err := p.ThreadOwner(t)
			if err != nil {
				return nil, err
			}
			out[t] = owner
		}
		return out, nil
	}
	origins, err := h.ThreadOrigins(rest)
	if err != nil {
		return nil, fmt.Errorf("pump: thread owners: %w", err)
	}
	for _, t := range rest {
		origin, seen := origins[t]
		if !seen {
			origin, _ = p.keptOrigin(t)
		}
		out[t] = originUser(origin)
	}
	return out, nil
}
