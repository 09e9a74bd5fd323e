package organism

import (
	"fmt"
	"maps"
	"slices"

	"github.com/xml-pipeline/xmlpipe/pump"
)

// ThreadOrigins implements pump.ThreadHistories: ThreadOrigin for each of
// threads, the first entries of the threads read at once, then those of
// the roots of the threads that are not their conversation's root
// (store.Reader.ThreadFirsts), rather than every entry of one or two
// threads per thread. A thread the store's filter says
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
	firsts, err := j.s.ThreadFirsts(ids)
	if err != nil {
		return nil, fmt.Errorf("organism: thread origins: %w", err)
	}
	roots := map[string][]string{} // root → the threads of its conversation
	for _, t := range ids {
		first, ok := firsts[t]
		if !ok {
			continue
		}
		if root := first.Conversation; root != "" && root != t {
			roots[root] = append(roots[root], t)
			continue
		}
		out[t] = first.From
	}
	if len(roots) == 0 {
		return out, nil
	}
	rs, err := j.s.ThreadFirsts(slices.Collect(maps.Keys(roots)))
	if err != nil {
		return nil, fmt.Errorf("organism: thread origins: roots: %w", err)
	}
	for root, ts := range roots {
		origin := "" // a root that left no entry: seen, with no origin
		if first, ok := rs[root]; ok {
			origin = first.From
		}
		for _, t := range ts {
			out[t] = origin
		}
	}
	return out, nil
}

var _ pump.ThreadHistories = storeJournal{}
