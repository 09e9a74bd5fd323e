package organism

import (
	"fmt"
	"maps"
	"slices"

	"github.com/xml-pipeline/xmlpipe/pump"
)

// ThreadOrigins implements pump.ThreadHistories: ThreadOrigin for each of
// threads, the journal read once for the threads and once for the roots
// of those that are not their conversation's root (store.Reader.ThreadEntries),
// rather than once or twice per thread. A thread the store's filter says
// was never journaled is left out without reading.
func (j storeJournal) ThreadOrigins(threads []string) (map[string]string, error) {
	var ids []string
	for _, t := range threads {
		if j.s.MayHaveThread(t) {
			ids = append(ids, t)
		}
	}
	out := map[string]string{}
	if len(ids) == 0 {
		return out, nil
	}
	es, err := j.s.ThreadEntries(ids)
	if err != nil {
		return nil, fmt.Errorf("organism: thread origins: %w", err)
	}
	roots := map[string][]string{} // root → the threads of its conversation
	for _, t := range ids {
		first := es[t]
		if len(first) == 0 {
			continue
		}
		if root := first[0].Conversation; root != "" && root != t {
			roots[root] = append(roots[root], t)
			continue
		}
		out[t] = first[0].From
	}
	if len(roots) == 0 {
		return out, nil
	}
	rs, err := j.s.ThreadEntries(slices.Collect(maps.Keys(roots)))
	if err != nil {
		return nil, fmt.Errorf("organism: thread origins: roots: %w", err)
	}
	for root, ts := range roots {
		origin := "" // a root that left no entry: seen, with no origin
		if len(rs[root]) > 0 {
			origin = rs[root][0].From
		}
		for _, t := range ts {
			out[t] = origin
		}
	}
	return out, nil
}

var _ pump.ThreadHistories = storeJournal{}
