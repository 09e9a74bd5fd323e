package registry

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unique"

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
// (never joined or split on "."), knows its parent and memoises one child per
// next hop while that child lives. It is safe for concurrent use.
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
	nodes map[uuid.UUID]*node

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

// node is one thread. Its path is head + seg for a root and parent's path +
// seg otherwise, so a node costs the same at any depth.
type node struct {
	id       uuid.UUID
	seg      unique.Handle[string]   // last path segment (interned)
	head     []unique.Handle[string] // roots only: the segments before seg
	parent   *node
	children []*node // at most one per next hop
	depth    int32   // len(path)
	created  int64   // unix nanoseconds
	touched  atomic.Int64
}

// threadEvent is one queued notification: a created node or ended ids.
type threadEvent struct {
	created *ThreadRecord
	ended   []string
}

// NewThreads returns an empty registry. Zero fields of cfg take their
// defaults; callers loading cfg from a file should call Validate first.
func NewThreads(cfg ThreadsConfig) *Threads {
	t := &Threads{cfg: cfg.WithDefaults(), nodes: make(map[uuid.UUID]*node)}
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
	if n := t.nodes[u]; n != nil {
		n.touched.Store(now)
		t.mu.Unlock()
		return nil
	}
	n := &node{id: u, created: now}
	n.touched.Store(now)
	org := unique.Make(t.cfg.Organism)
	if target == "" {
		n.head = []unique.Handle[string]{org}
		n.seg = unique.Make(from)
	} else {
		n.head = []unique.Handle[string]{org, unique.Make(from)}
		n.seg = unique.Make(target)
	}
	n.depth = int32(len(n.head) + 1)
	t.nodes[u] = n
	t.queueCreated(n)
	t.mu.Unlock()
	t.deliver()
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
	hop := unique.Make(to)
	now := t.cfg.Clock().UnixNano()
	fresh, err := uuid.NewRandom() // outside the lock: it reads the system's randomness
	if err != nil {
		return "", fmt.Errorf("registry: extend %s: new thread id: %w", id, err)
	}

	t.mu.Lock()
	p := t.nodes[u]
	if p == nil {
		t.mu.Unlock()
		return "", fmt.Errorf("registry: extend %s: %w", id, ErrUnknownThread)
	}
	p.touched.Store(now)
	for t.nodes[fresh] != nil { // never in practice; two threads never share a UUID
		if fresh, err = uuid.NewRandom(); err != nil {
			t.mu.Unlock()
			return "", fmt.Errorf("registry: extend %s: new thread id: %w", id, err)
		}
	}
	c := &node{id: fresh, seg: hop, parent: p, depth: p.depth + 1, created: now}
	c.touched.Store(now)
	p.children = append(p.children, c)
	t.nodes[fresh] = c
	t.queueCreated(c)
	t.mu.Unlock()
	t.deliver()
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
	n := t.nodes[u]
	if n == nil {
		t.mu.Unlock()
		return "", "", fmt.Errorf("registry: prune %s: %w", id, ErrUnknownThread)
	}
	switch {
	case n.depth < 2:
		err = fmt.Errorf("registry: prune %s: %w", id, ErrChainExhausted)
	case n.parent != nil:
		caller, replyThread = n.parent.seg.Value(), n.parent.id.String()
		n.parent.touched.Store(now)
	default:
		caller, replyThread = n.head[len(n.head)-1].Value(), id
	}
	t.queueEnded(t.removeSubtree(n))
	t.mu.Unlock()
	t.deliver()
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
	n := t.nodes[u]
	switch {
	case n == nil:
		return "", "", fmt.Errorf("registry: caller %s: %w", id, ErrUnknownThread)
	case n.depth < 2:
		return "", "", fmt.Errorf("registry: caller %s: %w", id, ErrChainExhausted)
	case n.parent != nil:
		return n.parent.seg.Value(), n.parent.id.String(), nil
	default:
		return n.head[len(n.head)-1].Value(), id, nil
	}
}

// End is "handler returned nil": id and all its descendants end.
func (t *Threads) End(id string) error {
	u, err := parseThreadID(id)
	if err != nil {
		return fmt.Errorf("registry: end %q: %w", id, ErrUnknownThread)
	}
	t.mu.Lock()
	n := t.nodes[u]
	if n == nil {
		t.mu.Unlock()
		return fmt.Errorf("registry: end %s: %w", id, ErrUnknownThread)
	}
	t.queueEnded(t.removeSubtree(n))
	t.mu.Unlock()
	t.deliver()
	return nil
}

// Known reports whether id is a live thread.
func (t *Threads) Known(id string) bool {
	return t.lookup(id) != nil
}

// Depth returns the number of segments of id's path, 0 if id is unknown.
func (t *Threads) Depth(id string) int {
	if n := t.lookup(id); n != nil {
		return int(n.depth)
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
	n := t.nodes[u]
	if n == nil {
		return ""
	}
	for n.parent != nil {
		n = n.parent
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
	n := t.nodes[u]
	if n == nil {
		return nil
	}
	out := make([]string, 0, n.depth)
	out = append(out, id)
	for p := n.parent; p != nil; p = p.parent {
		out = append(out, p.id.String())
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
	if n := t.nodes[u]; n != nil {
		n.touched.Store(now)
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
	for u, n := range t.nodes {
		out[u.String()] = n.path()
	}
	return out
}

// lookup returns the live node for id, or nil.
func (t *Threads) lookup(id string) *node {
	u, err := parseThreadID(id)
	if err != nil {
		return nil
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.nodes[u]
}

// removeSubtree detaches n from its parent and deletes n and every
// descendant, returning their ids parent-first. Callers hold t.mu.
func (t *Threads) removeSubtree(n *node) []string {
	if p := n.parent; p != nil {
		if i := slices.Index(p.children, n); i >= 0 {
			p.children = slices.Delete(p.children, i, i+1)
		}
	}
	var ids []string
	stack := []*node{n}
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		ids = append(ids, c.id.String())
		delete(t.nodes, c.id)
		stack = append(stack, c.children...)
		c.children, c.parent = nil, nil
	}
	return ids
}

// path returns a fresh copy of n's full path.
func (n *node) path() []string {
	out := make([]string, n.depth)
	i := len(out) - 1
	c := n
	for ; c.parent != nil; c = c.parent {
		out[i] = c.seg.Value()
		i--
	}
	out[i] = c.seg.Value()
	for j, h := range c.head {
		out[j] = h.Value()
	}
	return out
}

// record returns the persisted form of n.
func (n *node) record() ThreadRecord {
	r := ThreadRecord{
		ID:      n.id.String(),
		Path:    n.path(),
		Created: time.Unix(0, n.created).UTC(),
		Touched: time.Unix(0, n.touched.Load()).UTC(),
	}
	if n.parent != nil {
		r.Parent = n.parent.id.String()
	}
	return r
}
