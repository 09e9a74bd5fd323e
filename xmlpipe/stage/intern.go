package stage

import (
	"strings"
	"sync"
	"sync/atomic"
)

// internMax bounds an internTable: names beyond it are copied each time
// instead of kept (external input chooses <from> and payload names, so an
// unbounded table would be a way to grow the process).
const internMax = 4096

// internTable keeps one Go copy of the short strings every envelope repeats —
// <from>, <to>, the payload's name and namespace — so reading them from a
// document allocates nothing. Lookups take no lock (a copy-on-write map);
// unique.Make, used before, cost each envelope four weak-pointer lookups.
type internTable struct {
	mu sync.Mutex                        // serialises adds
	m  atomic.Pointer[map[string]string] // never modified once stored
}

// names is the process's table.
var names internTable

// get returns a Go-owned string equal to v. v may point into memory that
// is freed later (a libxml2 document's text); the result never does.
func (t *internTable) get(v string) string {
	if m := t.m.Load(); m != nil {
		if s, ok := (*m)[v]; ok {
			return s
		}
	}
	return t.add(v)
}

// add copies v and, while the table has room, keeps the copy.
func (t *internTable) add(v string) string {
	s := strings.Clone(v)
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.m.Load()
	n := 0
	if old != nil {
		if kept, ok := (*old)[v]; ok {
			return kept
		}
		n = len(*old)
	}
	if n >= internMax {
		return s
	}
	m := make(map[string]string, n+1)
	if old != nil {
		for k, x := range *old {
			m[k] = x
		}
	}
	m[s] = s
	t.m.Store(&m)
	return s
}
