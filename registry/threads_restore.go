package registry

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"
	"unique"

	"github.com/google/uuid"
)

// ErrInvalidRecord is returned by Restore for a persisted record that is
// malformed or contradicts the registry (bad id, duplicate, empty path, a
// child whose path is not its parent's plus one segment, an id already live).
var ErrInvalidRecord = errors.New("invalid persisted record")

// Records returns a snapshot of every live node in persisted form, parents
// before children (by depth, then creation time, then id).
func (t *Threads) Records() []ThreadRecord {
	t.mu.RLock()
	out := make([]ThreadRecord, 0, len(t.nodes))
	for _, n := range t.nodes {
		out = append(out, n.record())
	}
	t.mu.RUnlock()
	slices.SortFunc(out, func(a, b ThreadRecord) int {
		return cmp.Or(cmp.Compare(len(a.Path), len(b.Path)), a.Created.Compare(b.Created), cmp.Compare(a.ID, b.ID))
	})
	return out
}

// restoring is one record on its way into the registry.
type restoring struct {
	rec    *ThreadRecord
	id     uuid.UUID
	parent uuid.UUID // zero for a root
	node   *node
}

// Restore rebuilds nodes from persisted records, in any order, adding them to
// the registry. It is all-or-nothing for malformed records (ErrInvalidRecord).
// Records whose parent is neither restored nor live (orphans, cycles) are
// dropped: they are logged, and reported to the sink and OnEnd subscribers as
// ended so persisted state can follow. A restored node counts as touched at
// restore time (a restart is not idleness); Restore itself does not call
// ThreadCreated.
func (t *Threads) Restore(recs []ThreadRecord) error {
	all := make(map[uuid.UUID]*restoring, len(recs))
	order := make([]*restoring, 0, len(recs))
	for i := range recs {
		r, err := checkRecord(&recs[i])
		if err != nil {
			return fmt.Errorf("registry: restore thread record %d (%q): %w", i, recs[i].ID, err)
		}
		if all[r.id] != nil {
			return fmt.Errorf("registry: restore thread %s: duplicate: %w", r.rec.ID, ErrInvalidRecord)
		}
		all[r.id] = r
		order = append(order, r)
	}
	now := t.cfg.Clock()

	t.mu.Lock()
	attach, err := t.stageRestore(all, order, now)
	if err != nil {
		t.mu.Unlock()
		return err
	}
	var orphans []string
	for _, r := range order {
		if r.node == nil {
			orphans = append(orphans, r.rec.ID)
			continue
		}
		t.nodes[r.id] = r.node
	}
	for p, cs := range attach {
		p.children = append(p.children, cs...)
	}
	t.queueEnded(orphans)
	t.mu.Unlock()
	if len(orphans) > 0 {
		t.cfg.Logger.Warn("registry: dropped orphan thread records on restore", "count", len(orphans), "ids", orphans)
	}
	t.deliver()
	return nil
}

// checkRecord validates one record on its own.
func checkRecord(rec *ThreadRecord) (*restoring, error) {
	u, err := parseThreadID(rec.ID)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidRecord, err)
	}
	r := &restoring{rec: rec, id: u}
	if len(rec.Path) == 0 || len(rec.Path) > 1<<30 || slices.Contains(rec.Path, "") {
		return nil, fmt.Errorf("%w: path %q: %w", ErrInvalidRecord, rec.Path, ErrEmptySegment)
	}
	if rec.Parent != "" {
		if r.parent, err = parseThreadID(rec.Parent); err != nil {
			return nil, fmt.Errorf("%w: parent: %w", ErrInvalidRecord, err)
		}
		if r.parent == u {
			return nil, fmt.Errorf("%w: its own parent", ErrInvalidRecord)
		}
	}
	return r, nil
}

// stageRestore builds the nodes reachable from a root record or a live node,
// breadth-first, checking each child against its parent, and returns the
// children to attach to each parent. Unreached records keep node == nil.
// Callers hold t.mu; nothing in the registry changes.
func (t *Threads) stageRestore(all map[uuid.UUID]*restoring, order []*restoring, now time.Time) (map[*node][]*node, error) {
	kids := make(map[uuid.UUID][]*restoring)
	var queue []*restoring
	for _, r := range order {
		if t.nodes[r.id] != nil {
			return nil, fmt.Errorf("registry: restore thread %s: already live: %w", r.rec.ID, ErrInvalidRecord)
		}
		if r.parent == (uuid.UUID{}) {
			r.node = newRestoredNode(r, nil, now)
			queue = append(queue, r)
			continue
		}
		kids[r.parent] = append(kids[r.parent], r)
	}
	attach := make(map[*node][]*node)
	adopt := func(p *node, parentPath []string, r *restoring) error {
		path := r.rec.Path
		if len(path) != len(parentPath)+1 || !slices.Equal(path[:len(parentPath)], parentPath) {
			return fmt.Errorf("registry: restore thread %s: path %q does not extend parent %s path %q: %w",
				r.rec.ID, path, p.id, parentPath, ErrInvalidRecord)
		}
		// Several live children may share a hop: every forward gets its own
		// thread (Extend), so two requests in flight to one listener are
		// siblings with the same last segment.
		r.node = newRestoredNode(r, p, now)
		attach[p] = append(attach[p], r.node)
		return nil
	}
	for pid, ks := range kids {
		if p := t.nodes[pid]; p != nil {
			pp := p.path()
			for _, r := range ks {
				if err := adopt(p, pp, r); err != nil {
					return nil, err
				}
				queue = append(queue, r)
			}
		}
	}
	for len(queue) > 0 {
		r := queue[0]
		queue = queue[1:]
		for _, k := range kids[r.id] {
			if err := adopt(r.node, r.rec.Path, k); err != nil {
				return nil, err
			}
			queue = append(queue, k)
		}
	}
	return attach, nil
}

// newRestoredNode builds the node for r under parent p (nil for a root).
func newRestoredNode(r *restoring, p *node, now time.Time) *node {
	path := r.rec.Path
	n := &node{id: r.id, seg: unique.Make(path[len(path)-1]), parent: p, depth: int32(len(path))}
	if p == nil && len(path) > 1 {
		n.head = make([]unique.Handle[string], len(path)-1)
		for i, s := range path[:len(path)-1] {
			n.head[i] = unique.Make(s)
		}
	}
	created := r.rec.Created
	if created.IsZero() {
		created = now
	}
	n.created = created.UnixNano()
	touched := now
	if r.rec.Touched.After(now) {
		touched = r.rec.Touched
	}
	n.touched.Store(touched.UnixNano())
	return n
}
