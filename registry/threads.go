package registry

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
)

// ErrUnknownThread is returned for a thread id the registry does not hold
// (never created, already ended, or not a valid thread id at all).
var ErrUnknownThread = errors.New("unknown thread")

// ErrChainExhausted is returned by Prune when the thread's path has a single
// segment, so there is no caller to respond to. The thread ends.
var ErrChainExhausted = errors.New("thread chain exhausted")

// ErrEmptySegment is returned when a path segment (a sender or listener name)
// is empty.
var ErrEmptySegment = errors.New("empty thread path segment")

// DefaultOrganism is the first path segment used when ThreadsConfig.Organism
// is empty (the Python reference's default organism name).
const DefaultOrganism = "organism"

// DefaultThreadTTL is the idle time after which Collect removes a thread when
// ThreadsConfig.TTL is zero.
const DefaultThreadTTL = time.Hour

// ThreadsConfig configures a Threads registry.
type ThreadsConfig struct {
	// Organism is the first segment of every conversation path
	// (default DefaultOrganism); it comes from organism.name.
	Organism string `yaml:"-"`
	// TTL is how long a thread may stay untouched before Collect removes it
	// (default DefaultThreadTTL).
	TTL time.Duration `yaml:"thread_ttl"`
	// Clock returns the current time (default time.Now).
	Clock func() time.Time `yaml:"-"`
	// Sink, when non-nil, is told about every node created and ended.
	Sink ThreadSink `yaml:"-"`
	// Logger receives warnings (default slog.Default()).
	Logger *slog.Logger `yaml:"-"`
}

// WithDefaults returns a copy of c with every zero field set to its default.
func (c ThreadsConfig) WithDefaults() ThreadsConfig {
	if c.Organism == "" {
		c.Organism = DefaultOrganism
	}
	if c.TTL == 0 {
		c.TTL = DefaultThreadTTL
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Validate reports a configuration that cannot work.
func (c ThreadsConfig) Validate() error {
	if c.TTL < 0 {
		return fmt.Errorf("registry: thread ttl %v: must not be negative", c.TTL)
	}
	return nil
}

// ThreadRecord is the persisted form of one thread node.
type ThreadRecord struct {
	// ID is the node's thread UUID.
	ID string
	// Parent is the parent node's UUID, "" for a conversation root.
	Parent string
	// Path is the node's full call chain, one listener or sender per segment.
	Path []string
	// Created is when the node was created.
	Created time.Time
	// Touched is when the node was last used.
	Touched time.Time
}

// ThreadSink is told about every node created and every node ended, in the
// order the registry changed. The store implements it for durability.
type ThreadSink interface {
	// ThreadCreated is called once for every new node.
	ThreadCreated(rec ThreadRecord)
	// ThreadsEnded is called with the ids of nodes that ended together.
	ThreadsEnded(ids []string)
}

// Threads is the thread registry: a forest of call chains, one tree per
// conversation. Each node maps an opaque UUID to a path held as segments
// (never joined or split on "."), knows its parent and its live children
// (one per forward). The nodes hold no Go pointers (threads_slab.go), so
// idle conversations waiting for their TTL cost the garbage collector
// nothing. It is safe for concurrent use.
//
// Notifications (ThreadsConfig.Sink and OnEnd subscribers) are delivered in
// the order the registry changed, outside the registry's lock, so a callback
// may query Threads (it must not create, extend, prune or end threads). A
// mutating call returns only after its own notifications were delivered —
// by itself, or by another goroutine already delivering — so a durable sink
// has seen a thread before the caller can send a message on it.
type Threads struct {
	cfg ThreadsConfig

	mu    sync.RWMutex
	nodes map[uuid.UUID]nodeRef // guarded by mu, like slab and segs
	slab  nodeSlab
	segs  segTable

	// pending, delivering, queued, dispatched and subs are guarded by mu;
	// queued counts events ever queued, dispatched those handed to the sink
	// and subscribers, and delivered is signalled when dispatched grows or a
	// deliverer stops.
	pending    []threadEvent
	delivering bool
	queued     uint64
	dispatched uint64
	delivered  *sync.Cond
	subs       []func(ids []string)
}

// threadEvent is one queued notification: a created node or ended ids.
type threadEvent struct {
	created *ThreadRecord
	ended   []string
}

// NewThreads returns an empty registry. Zero fields of cfg take their
// defaults; callers loading cfg from a file should call Validate first.
func NewThreads(cfg ThreadsConfig) *Threads {
	t := &Threads{cfg: cfg.WithDefaults(), nodes: make(map[uuid.UUID]nodeRef)}
	t.delivered = sync.NewCond(&t.mu)
	return t
}

// OnEnd subscribes fn to the ids of every group of nodes that ends (Prune,
// End, Collect, orphans dropped by Restore). The todo registry and the
// context buffer use it to free their per-thread state.
func (t *Threads) OnEnd(fn func(ids []string)) {
	t.mu.Lock()
	t.subs = append(slices.Clip(t.subs), fn)
	t.mu.Unlock()
}

// Begin registers an external conversation: id (already a valid v4, chosen by
// the pump) → [organism, from, target]. An empty target registers the origin
// only ([organism, from]), used for broadcast where each member gets
// Extend(id, member). If id is already known it is only touched.
func (t *Threads) Begin(id, from, target string) error {
	u, err := parseThreadID(id)
	if err != nil {
		return fmt.Errorf("registry: begin %q: %w", id, err)
	}
	if from == "" {
		return fmt.Errorf("registry: begin %s: sender: %w", id, ErrEmptySegment)
	}
	now := t.cfg.Clock().UnixNano()
	t.mu.Lock()
	if r := t.nodes[u]; r != 0 {
		t.slab.at(r).touched.Store(now)
		t.mu.Unlock()
		return nil
	}
	head := []string{t.cfg.Organism, from}
	seg := target
	if target == "" {
		head, seg = head[:1], from
	}
	t.unlockAndDeliver(t.queueCreated(t.newNode(u, 0, head, seg, now, now)))
	return nil
}

// Extend returns a fresh child thread of id for the next hop to, and touches
// id. Every forward gets its own child, even to the same target: two requests
// in flight from one thread to one listener must not share a thread, or the
// first reply (which prunes its thread) would end the other's.
func (t *Threads) Extend(id, to string) (string, error) {
	if to == "" {
		return "", fmt.Errorf("registry: extend %s: %w", id, ErrEmptySegment)
	}
	u, err := parseThreadID(id)
	if err != nil {
		return "", fmt.Errorf("registry: extend %q: %w", id, ErrUnknownThread)
	}
	now := t.cfg.Clock().UnixNano()
	fresh, err := uuid.NewRandom() // outside the lock: it reads the system's randomness
	if err != nil {
		return "", fmt.Errorf("registry: extend %s: new thread id: %w", id, err)
	}

	t.mu.Lock()
	p := t.nodes[u]
	if p == 0 {
		t.mu.Unlock()
		return "", fmt.Errorf("registry: extend %s: %w", id, ErrUnknownThread)
	}
	t.slab.at(p).touched.Store(now)
	for t.nodes[fresh] != 0 { // never in practice; two threads never share a UUID
		if fresh, err = uuid.NewRandom(); err != nil {
			t.mu.Unlock()
			return "", fmt.Errorf("registry: extend %s: new thread id: %w", id, err)
		}
	}
	t.unlockAndDeliver(t.queueCreated(t.newNode(fresh, p, nil, to, now, now)))
	return fresh.String(), nil
}

// Prune is .respond(): the caller is the second-to-last path segment; the
// reply travels on the parent node's id, or on id itself when id is a
// conversation root (the external caller knows that id). The node and all its
// descendants end. An unknown id gives ErrUnknownThread; a path of one segment
// gives ErrChainExhausted (and that node ends, as the chain is spent).
func (t *Threads) Prune(id string) (caller, replyThread string, err error) {
	u, perr := parseThreadID(id)
	if perr != nil {
		return "", "", fmt.Errorf("registry: prune %q: %w", id, ErrUnknownThread)
	}
	now := t.cfg.Clock().UnixNano()
	t.mu.Lock()
	r := t.nodes[u]
	if r == 0 {
		t.mu.Unlock()
		return "", "", fmt.Errorf("registry: prune %s: %w", id, ErrUnknownThread)
	}
	caller, replyThread, err = t.callerOf(r, id)
	if err != nil {
		err = fmt.Errorf("registry: prune %s: %w", id, err)
	} else if n := t.slab.at(r); n.parent != 0 {
		t.slab.at(n.parent).touched.Store(now)
	}
	t.unlockAndDeliver(t.queueEnded(t.removeSubtree(r)))
	return caller, replyThread, err
}

// Caller is Prune without the removal: the caller and the reply thread a
// .respond() on id would use, with the same errors (ErrChainExhausted for a
// one-segment path). The pump prunes only once the reply has passed the
// ingress stages, so a rejected reply can still reach its producer on id.
func (t *Threads) Caller(id string) (caller, replyThread string, err error) {
	u, perr := parseThreadID(id)
	if perr != nil {
		return "", "", fmt.Errorf("registry: caller %q: %w", id, ErrUnknownThread)
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	r := t.nodes[u]
	if r == 0 {
		return "", "", fmt.Errorf("registry: caller %s: %w", id, ErrUnknownThread)
	}
	if caller, replyThread, err = t.callerOf(r, id); err != nil {
		return "", "", fmt.Errorf("registry: caller %s: %w", id, err)
	}
	return caller, replyThread, nil
}

// callerOf returns the caller and reply thread of node r (whose id is id):
// its parent's last segment and id, or for a root the segment before its
// last and id itself; ErrChainExhausted for a one-segment path. Callers hold
// t.mu.
func (t *Threads) callerOf(r nodeRef, id string) (caller, replyThread string, err error) {
	n := t.slab.at(r)
	switch {
	case n.depth < 2:
		return "", "", ErrChainExhausted
	case n.parent != 0:
		p := t.slab.at(n.parent)
		return t.segs.name(p.seg), p.id.String(), nil
	default:
		return t.segs.name(n.head[n.nhead-1]), id, nil
	}
}

// End is "handler returned nil": id and all its descendants end.
func (t *Threads) End(id string) error {
	u, err := parseThreadID(id)
	if err != nil {
		return fmt.Errorf("registry: end %q: %w", id, ErrUnknownThread)
	}
	t.mu.Lock()
	r := t.nodes[u]
	if r == 0 {
		t.mu.Unlock()
		return fmt.Errorf("registry: end %s: %w", id, ErrUnknownThread)
	}
	t.unlockAndDeliver(t.queueEnded(t.removeSubtree(r)))
	return nil
}

// Known reports whether id is a live thread.
func (t *Threads) Known(id string) bool {
	return t.Depth(id) > 0
}

// Depth returns the number of segments of id's path, 0 if id is unknown.
func (t *Threads) Depth(id string) int {
	u, err := parseThreadID(id)
	if err != nil {
		return 0
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	if r := t.nodes[u]; r != 0 {
		return int(t.slab.at(r).depth)
	}
	return 0
}

// Root returns the id of the conversation root of id, "" if id is unknown.
func (t *Threads) Root(id string) string {
	u, err := parseThreadID(id)
	if err != nil {
		return ""
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	r := t.nodes[u]
	if r == 0 {
		return ""
	}
	n := t.slab.at(r)
	for n.parent != 0 {
		n = t.slab.at(n.parent)
	}
	return n.id.String()
}

// Ancestors returns id, its parent, …, its conversation root; nil if id is
// unknown. It makes Threads a Lineage for the todo registry.
func (t *Threads) Ancestors(id string) []string {
	u, err := parseThreadID(id)
	if err != nil {
		return nil
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	r := t.nodes[u]
	if r == 0 {
		return nil
	}
	n := t.slab.at(r)
	out := make([]string, 0, n.depth)
	out = append(out, id)
	for n.parent != 0 {
		n = t.slab.at(n.parent)
		out = append(out, n.id.String())
	}
	return out
}

// Touch marks id as used now, postponing its collection. Unknown ids are
// ignored.
func (t *Threads) Touch(id string) {
	u, err := parseThreadID(id)
	if err != nil {
		return
	}
	now := t.cfg.Clock().UnixNano()
	t.mu.RLock()
	if r := t.nodes[u]; r != 0 {
		t.slab.at(r).touched.Store(now)
	}
	t.mu.RUnlock()
}

// Len returns the number of live threads.
func (t *Threads) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.nodes)
}

// DebugDump returns every live thread id mapped to a copy of its path. It
// exposes topology: for privileged/operator use only, never for handlers.
func (t *Threads) DebugDump() map[string][]string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make(map[string][]string, len(t.nodes))
	for u, r := range t.nodes {
		out[u.String()] = t.path(r)
	}
	return out
}

// removeSubtree detaches r from its parent and frees r and every
// descendant, returning their ids parent-first. Callers hold t.mu.
func (t *Threads) removeSubtree(r nodeRef) []string {
	t.unlink(r)
	var ids []string
	stack := []nodeRef{r}
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n := t.slab.at(c)
		ids = append(ids, n.id.String())
		for k := n.child; k != 0; k = t.slab.at(k).next {
			stack = append(stack, k)
		}
		t.freeNode(c)
	}
	return ids
}

// path returns a fresh copy of node r's full path. Callers hold t.mu.
func (t *Threads) path(r nodeRef) []string {
	n := t.slab.at(r)
	out := make([]string, n.depth)
	i := len(out) - 1
	for ; n.parent != 0; n = t.slab.at(n.parent) {
		out[i] = t.segs.name(n.seg)
		i--
	}
	out[i] = t.segs.name(n.seg)
	for j, h := range n.head[:n.nhead] {
		out[j] = t.segs.name(h)
	}
	return out
}

// record returns the persisted form of node r. Callers hold t.mu.
func (t *Threads) record(r nodeRef) ThreadRecord {
	n := t.slab.at(r)
	rec := ThreadRecord{
		ID:      n.id.String(),
		Path:    t.path(r),
		Created: time.Unix(0, n.created).UTC(),
		Touched: time.Unix(0, n.touched.Load()).UTC(),
	}
	if n.parent != 0 {
		rec.Parent = t.slab.at(n.parent).id.String()
	}
	return rec
}
