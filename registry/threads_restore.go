package registry

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
)

// ErrInvalidRecord is returned by Restore for a persisted record that is
// malformed or contradicts the registry (bad id, duplicate, empty path, a
// child whose path is not its parent's plus one segment, an id already live).
var ErrInvalidRecord = errors.New("invalid persisted record")

// Records returns a snapshot of every live node in persisted form, parents
// before children (by depth, then creation time, then id).
func (t *Threads) Records() []ThreadRecord {
	out := make([]ThreadRecord, 0, t.Len())
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.RLock()
		for _, r := range s.nodes {
			out = append(out, s.record(r))
		}
		s.mu.RUnlock()
	}
	slices.SortFunc(out, func(a, b ThreadRecord) int {
		return cmp.Or(cmp.Compare(len(a.Path), len(b.Path)), a.Created.Compare(b.Created), cmp.Compare(a.ID, b.ID))
	})
	return out
}

// restoring is one record on its way into the registry.
type restoring struct {
	rec     *ThreadRecord
	id      uuid.UUID
	parent  uuid.UUID    // zero for a root
	reached bool         // its parent is live or reached (or it is a root)
	shard   *threadShard // its tree's shard, once staged
	ref     nodeRef      // its slot in shard, once committed
}

// Restore rebuilds nodes from persisted records, in any order, adding them to
// the registry. It is all-or-nothing for malformed records (ErrInvalidRecord).
// Records whose parent is neither restored nor live (orphans, cycles) are
// dropped: they are logged, and reported to the sink and OnEnd subscribers as
// ended so persisted state can follow. A restored node was last touched when
// its record says (restore time when it says nothing), so its idle time and
// TTL run on across the restart; Restore itself does not call
// ThreadCreated. A restored node lives in its tree's shard; one whose id
// names another shard (ids persisted before the registry was sharded) is
// found through the strays index.
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

	for i := range t.shards { // in order, the only place two shard locks are held
		t.shards[i].mu.Lock()
	}
	unlockRest := func() {
		for i := 1; i < len(t.shards); i++ {
			t.shards[i].mu.Unlock()
		}
	}
	plan, err := t.stageRestore(all, order)
	if err != nil {
		unlockRest()
		t.shards[0].mu.Unlock()
		return err
	}
	for _, r := range plan {
		t.commitRestored(r, all, now)
	}
	var orphans []string
	for _, r := range order {
		if !r.reached {
			orphans = append(orphans, r.rec.ID)
		}
	}
	// Orphans belong to no shard; the first one reports them, once the
	// others are unlocked (subscribers may query the registry).
	unlockRest()
	t.shards[0].unlockEnded(orphans)
	if len(orphans) > 0 {
		t.cfg.Logger.Warn("registry: dropped orphan thread records on restore", "count", len(orphans), "ids", orphans)
	}
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
	if rec.Hops < 0 || rec.Hops > MaxEnteredHops {
		return nil, fmt.Errorf("%w: hops %d: %w", ErrInvalidRecord, rec.Hops, ErrBadHops)
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

// stageRestore finds the records reachable from a root record or a live
// node, breadth-first, checking each child's path against its parent's, and
// returns them parents first; it marks them reached and sets their shard.
// Callers hold every shard's lock; nothing in the registry changes, so an
// error leaves it as it was.
func (t *Threads) stageRestore(all map[uuid.UUID]*restoring, order []*restoring) ([]*restoring, error) {
	kids := make(map[uuid.UUID][]*restoring)
	var plan []*restoring
	for _, r := range order {
		if _, live := t.liveLocked(r.id); live != 0 {
			return nil, fmt.Errorf("registry: restore thread %s: already live: %w", r.rec.ID, ErrInvalidRecord)
		}
		if r.parent == (uuid.UUID{}) {
			if len(r.rec.Path) > maxHead+1 {
				return nil, fmt.Errorf("registry: restore thread %s: root path %q has more than %d segments: %w",
					r.rec.ID, r.rec.Path, maxHead+1, ErrInvalidRecord)
			}
			r.reached, r.shard = true, t.home(r.id)
			plan = append(plan, r)
			continue
		}
		kids[r.parent] = append(kids[r.parent], r)
	}
	// Several live children may share a hop: every forward gets its own
	// thread (Extend), so two requests in flight to one listener are
	// siblings with the same last segment.
	adopt := func(parentID uuid.UUID, parentPath []string, shard *threadShard, r *restoring) error {
		path := r.rec.Path
		if len(path) != len(parentPath)+1 || !slices.Equal(path[:len(parentPath)], parentPath) {
			return fmt.Errorf("registry: restore thread %s: path %q does not extend parent %s path %q: %w",
				r.rec.ID, path, parentID, parentPath, ErrInvalidRecord)
		}
		r.reached, r.shard = true, shard
		plan = append(plan, r)
		return nil
	}
	for pid, ks := range kids {
		if ps, p := t.liveLocked(pid); p != 0 {
			pp := ps.path(p)
			for _, r := range ks {
				if err := adopt(pid, pp, ps, r); err != nil {
					return nil, err
				}
			}
		}
	}
	for i := 0; i < len(plan); i++ { // plan grows while it is walked
		r := plan[i]
		for _, k := range kids[r.id] {
			if err := adopt(r.id, r.rec.Path, r.shard, k); err != nil {
				return nil, err
			}
		}
	}
	return plan, nil
}

// commitRestored adds the node for staged record r under its parent (a live
// node or an earlier record of all), in its tree's shard. Callers hold every
// shard's lock.
func (t *Threads) commitRestored(r *restoring, all map[uuid.UUID]*restoring, now time.Time) {
	path := r.rec.Path
	var parent nodeRef
	var head []string
	if r.parent != (uuid.UUID{}) {
		if pr := all[r.parent]; pr != nil {
			parent = pr.ref
		} else {
			_, parent = t.liveLocked(r.parent)
		}
	} else {
		head = path[:len(path)-1]
	}
	created := r.rec.Created
	if created.IsZero() {
		created = now
	}
	touched := r.rec.Touched // its last activity: a restart is idleness too
	if touched.IsZero() {
		touched = now
	}
	r.ref = r.shard.newNode(r.id, parent, head, path[len(path)-1], created.UnixNano(), touched.UnixNano())
	if parent == 0 { // a child has its tree's, as persisted or not
		r.shard.slab.at(r.ref).entered = uint16(r.rec.Hops)
	}
	switch { // a root is never spent; awaiting wins, as in Await
	case r.rec.Awaiting:
		r.shard.slab.at(r.ref).marks = markAwaiting
	case r.rec.Spent && parent != 0:
		r.shard.slab.at(r.ref).marks = markSpent
	}
	r.shard.setRef(r.ref, r.rec.Ref)
	profile := NarrowProfile("", r.rec.Profile)
	if parent != 0 { // a child is never wider than its parent, even as persisted
		profile = NarrowProfile(r.shard.segs.name(r.shard.slab.at(parent).profile), profile)
	}
	r.shard.setProfile(r.ref, profile)
	if r.shard != t.home(r.id) {
		t.addStray(r.id, r.shard)
	}
}

// liveLocked returns the shard and node of live id, or 0. Callers hold
// every shard's lock.
func (t *Threads) liveLocked(id uuid.UUID) (*threadShard, nodeRef) {
	s := t.home(id)
	if r := s.nodes[id]; r != 0 {
		return s, r
	}
	if s = t.strayShard(id); s != nil {
		return s, s.nodes[id]
	}
	return nil, 0
}
