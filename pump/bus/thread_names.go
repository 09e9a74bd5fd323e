package bus

import (
	"slices"
	"sync"

	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// maxThreadNames bounds the threads whose participants threadNames keeps.
const maxThreadNames = 1024

// threadNames keeps, for the threads whose visibility to a user with a
// profile was judged lately, the names their journal entries carry
// (participantsOf) and the seq up to which they were read: judging a
// thread again — each poll of a client following it (?after=SEQ) — reads
// only its entries journaled since, not the whole thread. At most
// maxThreadNames threads are kept; past that one is forgotten (and read
// whole at its next judgement).
type threadNames struct {
	mu    sync.Mutex
	limit int
	seen  map[string]*namesRead
}

// namesRead is what threadNames knows of one thread.
type namesRead struct {
	seq   int64 // the last entry read
	names []string
}

func newThreadNames(limit int) *threadNames {
	return &threadNames{limit: limit, seen: map[string]*namesRead{}}
}

// of returns the names the entries of thread id journaled in st carry
// (sender, addressee, listener; participantsOf), reading those journaled
// since it last read them. It holds its lock while it reads, so that what
// it keeps always covers the thread from its first entry.
func (n *threadNames) of(st *store.Store, id string) ([]string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	r := n.seen[id]
	if r == nil {
		r = &namesRead{names: []string{}}
	}
	entries, err := st.ThreadAfter(id, r.seq, 0)
	if err != nil {
		return nil, err
	}
	if len(entries) > 0 {
		names := slices.Clone(r.names) // a caller may hold the old slice
		for _, name := range participantsOf(entries) {
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
		r = &namesRead{seq: entries[len(entries)-1].Seq, names: names}
	}
	if _, kept := n.seen[id]; !kept && len(n.seen) >= n.limit {
		for other := range n.seen {
			delete(n.seen, other)
			break
		}
	}
	n.seen[id] = r
	return r.names, nil
}
