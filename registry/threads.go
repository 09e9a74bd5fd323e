package registry

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
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
	// Ref is the correlation ref the message that opened the node was sent
	// with (ExtendRef), "" for none.
	Ref string
	// Profile is the node's security profile ("" for none; see
	// NarrowProfile), fixed when the node was created.
	Profile string
	// Hops is how many hops the node's conversation made before it
	// entered this registry (JoinAsAt: the chain of a peer organism's
	// call), the same for every node of a conversation; 0 for one begun
	// here. Restore takes a root's and gives its children the same.
	Hops int
	// Spent and Awaiting are the node's lifetime marks (threads_spent.go):
	// its handler forwarded or failed, so it ends with its conversation
	// (EndSpent); or it awaits answers from outside it and never does.
	// A sink learns them with the activity sweep (SaveActivity), and
	// Restore gives them back.
	Spent, Awaiting bool
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
// The forest is split into shards (threads_shard.go), each with its own lock,
// so conversations on different cores do not queue behind one lock: every
// thread of a conversation lives in one shard, the one its id names.
//
// Notifications (ThreadsConfig.Sink and OnEnd subscribers) are delivered
// outside the registry's locks, so a callback may query Threads (it must not
// create, extend, prune or end threads). With a sink they are delivered in
// the order the registry changed — per shard, so always in order for one
// conversation; without one, OnEnd subscribers hear of each end from the
// call that caused it. A mutating call returns only after its own
// notifications were delivered — by itself, or by another goroutine already
// delivering — so a durable sink has seen a thread before the caller can send
// a message on it. Sinks and subscribers may be called from several
// goroutines at once.
type Threads struct {
	cfg    ThreadsConfig
	shards [threadShards]threadShard

	// strays locates the nodes Restore placed in a shard their id does not
	// name (their tree's shard): ids persisted before the registry was
	// sharded. Guarded by strayMu, taken after a shard's lock; nstrays is
	// its size, read without the lock to skip the lookup when empty.
	strayMu sync.RWMutex
	strays  map[uuid.UUID]*threadShard
	nstrays atomic.Int64
}

// NewThreads returns an empty registry. Zero fields of cfg take their
// defaults; callers loading cfg from a file should call Validate first.
func NewThreads(cfg ThreadsConfig) *Threads {
	t := &Threads{cfg: cfg.WithDefaults()}
	for i := range t.shards {
		t.shards[i].init(t, uint8(i))
	}
	return t
}

// OnEnd subscribes fn to the ids of every group of nodes that ends (Prune,
// End, Collect, orphans dropped by Restore). The todo registry and the
// context buffer use it to free their per-thread state.
func (t *Threads) OnEnd(fn func(ids []string)) {
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		s.subs = append(slices.Clip(s.subs), fn)
		s.mu.Unlock()
	}
}

// Begin registers an external conversation: id (already a valid v4, chosen by
// the pump) → [organism, from, target]. An empty target registers the origin
// only ([organism, from]), used for broadcast where each member gets
// Extend(id, member). If id is already known it is only touched.
func (t *Threads) Begin(id, from, target string) error {
	_, _, _, err := t.joinAs("begin", id, from, target, "", 0)
	return err
}

// Join is how an external message enters: if id is a live thread it is
// touched and Join returns its conversation root; otherwise it is Begin
// (created reports so) and the root is id itself. One lookup instead of
// Known followed by Root and Touch, or by Begin.
func (t *Threads) Join(id, from, target string) (root string, created bool, err error) {
	root, created, _, err = t.joinAs("join", id, from, target, "", 0)
	return root, created, err
}

// joinAs is JoinAsAt (profile already canonical), its errors naming op.
func (t *Threads) joinAs(op, id, from, target, profile string, hops int) (root string, created bool, threadProfile string, err error) {
	u, err := parseThreadID(id)
	if err != nil {
		return "", false, "", fmt.Errorf("registry: %s %q: %w", op, id, err)
	}
	if hops < 0 || hops > MaxEnteredHops {
		return "", false, "", fmt.Errorf("registry: %s %s: %w: %d (0 to %d)", op, id, ErrBadHops, hops, MaxEnteredHops)
	}
	if from == "" {
		return "", false, "", fmt.Errorf("registry: %s %s: sender: %w", op, id, ErrEmptySegment)
	}
	now := t.cfg.Clock().UnixNano()
	s, r := t.lock(u)
	if r == 0 && s != t.home(u) { // a stray that just ended: a new root lives at home
		s.mu.Unlock()
		s = t.home(u)
		s.mu.Lock()
		r = s.nodes[u]
	}
	if r != 0 {
		n := s.slab.at(r)
		n.touched.Store(now)
		threadProfile = s.segs.name(n.profile)
		for n.parent != 0 {
			n = s.slab.at(n.parent)
		}
		root = id
		if n.id != u {
			root = n.id.String()
		}
		s.mu.Unlock()
		return root, false, threadProfile, nil
	}
	head := []string{t.cfg.Organism, from}
	seg := target
	if target == "" {
		head, seg = head[:1], from
	}
	r = s.newNode(u, 0, head, seg, now, now)
	s.slab.at(r).entered = uint16(hops)
	s.setProfile(r, profile)
	s.unlockAndDeliver(s.queueCreated(r, id, ""))
	return id, true, profile, nil
}

// Extend returns a fresh child thread of id for the next hop to, and touches
// id. Every forward gets its own child, even to the same target: two requests
// in flight from one thread to one listener must not share a thread, or the
// first reply (which prunes its thread) would end the other's. The child's id
// names its parent's shard (threadShardBits of its 122 random bits).
func (t *Threads) Extend(id, to string) (string, error) {
	return t.ExtendRef(id, to, "")
}

// ExtendRef is Extend for a message sent with a correlation ref: the child
// keeps ref (Ref, CallerRef, ThreadRecord.Ref) until it ends, so that the
// answer coming back from it — after any number of hops below it, and after
// a restart — can be told apart from the answers to its siblings.
func (t *Threads) ExtendRef(id, to, ref string) (string, error) {
	child, _, err := t.extend(id, to, ref, "")
	return child, err
}

// extend is ExtendAs.
func (t *Threads) extend(id, to, ref, want string) (string, string, error) {
	child, profile, _, err := t.extendMarking(id, to, ref, want, false)
	return child, profile, err
}

// extendMarking is ExtendAs that, with spend, marks id spent as ForwardAs
// says, reporting whether id is so marked.
func (t *Threads) extendMarking(id, to, ref, want string, spend bool) (string, string, bool, error) {
	if to == "" {
		return "", "", false, fmt.Errorf("registry: extend %s: %w", id, ErrEmptySegment)
	}
	u, err := parseThreadID(id)
	if err != nil {
		return "", "", false, fmt.Errorf("registry: extend %q: %w", id, ErrUnknownThread)
	}
	now := t.cfg.Clock().UnixNano()
	fresh, err := uuid.NewRandom() // outside the lock: it reads the system's randomness
	if err != nil {
		return "", "", false, fmt.Errorf("registry: extend %s: new thread id: %w", id, err)
	}

	s, p := t.lock(u)
	if p == 0 {
		s.mu.Unlock()
		return "", "", false, fmt.Errorf("registry: extend %s: %w", id, ErrUnknownThread)
	}
	pn := s.slab.at(p)
	pn.touched.Store(now)
	spent := false
	if spend && pn.parent != 0 && pn.marks&markAwaiting == 0 {
		pn.marks |= markSpent
		spent = true
	}
	profile := s.segs.name(pn.profile)
	if want != "" {
		profile = NarrowProfile(profile, want)
	}
	fresh = inShard(timeOrdered(fresh, now), s.index)
	for s.nodes[fresh] != 0 || t.isStray(fresh) { // never in practice; two threads never share a UUID
		if fresh, err = uuid.NewRandom(); err != nil {
			s.mu.Unlock()
			return "", "", false, fmt.Errorf("registry: extend %s: new thread id: %w", id, err)
		}
		fresh = inShard(timeOrdered(fresh, now), s.index)
	}
	r := s.newNode(fresh, p, nil, to, now, now)
	s.setRef(r, ref)
	s.setProfile(r, profile)
	child := fresh.String()
	s.unlockAndDeliver(s.queueCreated(r, child, id))
	return child, profile, spent, nil
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
	s, r := t.lock(u)
	if r == 0 {
		s.mu.Unlock()
		return "", "", fmt.Errorf("registry: prune %s: %w", id, ErrUnknownThread)
	}
	caller, replyThread, err = s.callerOf(r, id)
	if err != nil {
		err = fmt.Errorf("registry: prune %s: %w", id, err)
	} else if n := s.slab.at(r); n.parent != 0 {
		s.slab.at(n.parent).touched.Store(now)
	}
	s.unlockEnded(s.removeSubtree(nil, r, id))
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
	s, r := t.rlock(u)
	defer s.mu.RUnlock()
	if r == 0 {
		return "", "", fmt.Errorf("registry: caller %s: %w", id, ErrUnknownThread)
	}
	if caller, replyThread, err = s.callerOf(r, id); err != nil {
		return "", "", fmt.Errorf("registry: caller %s: %w", id, err)
	}
	return caller, replyThread, nil
}

// CallerRef is Caller that also returns the correlation ref of id (""
// when it has none): what an answer travelling back from id carries.
func (t *Threads) CallerRef(id string) (caller, replyThread, ref string, err error) {
	u, perr := parseThreadID(id)
	if perr != nil {
		return "", "", "", fmt.Errorf("registry: caller %q: %w", id, ErrUnknownThread)
	}
	s, r := t.rlock(u)
	defer s.mu.RUnlock()
	if r == 0 {
		return "", "", "", fmt.Errorf("registry: caller %s: %w", id, ErrUnknownThread)
	}
	if caller, replyThread, err = s.callerOf(r, id); err != nil {
		return "", "", "", fmt.Errorf("registry: caller %s: %w", id, err)
	}
	return caller, replyThread, s.refs[r], nil
}

// Ref returns the correlation ref of thread id (ExtendRef), "" when it has
// none or is not live.
func (t *Threads) Ref(id string) string {
	u, err := parseThreadID(id)
	if err != nil {
		return ""
	}
	s, r := t.rlock(u)
	defer s.mu.RUnlock()
	if r == 0 {
		return ""
	}
	return s.refs[r]
}

// End is "handler returned nil": id and all its descendants end.
func (t *Threads) End(id string) error {
	u, err := parseThreadID(id)
	if err != nil {
		return fmt.Errorf("registry: end %q: %w", id, ErrUnknownThread)
	}
	s, r := t.lock(u)
	if r == 0 {
		s.mu.Unlock()
		return fmt.Errorf("registry: end %s: %w", id, ErrUnknownThread)
	}
	s.unlockEnded(s.removeSubtree(nil, r, id))
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
	s, r := t.rlock(u)
	defer s.mu.RUnlock()
	if r != 0 {
		return int(s.slab.at(r).depth)
	}
	return 0
}

// Root returns the id of the conversation root of id, "" if id is unknown.
func (t *Threads) Root(id string) string {
	u, err := parseThreadID(id)
	if err != nil {
		return ""
	}
	s, r := t.rlock(u)
	defer s.mu.RUnlock()
	if r == 0 {
		return ""
	}
	n := s.slab.at(r)
	if n.parent == 0 {
		return id // a root: the caller's string is its id
	}
	for n.parent != 0 {
		n = s.slab.at(n.parent)
	}
	return n.id.String()
}

// Origin returns the sender that began the conversation of id — the second
// segment of its root's path, [organism, sender, …] — and whether id is a
// live thread. The pump uses it to let an outside party name only threads of
// its own conversations.
func (t *Threads) Origin(id string) (sender string, ok bool) {
	u, err := parseThreadID(id)
	if err != nil {
		return "", false
	}
	s, r := t.rlock(u)
	defer s.mu.RUnlock()
	if r == 0 {
		return "", false
	}
	n := s.slab.at(r)
	for n.parent != 0 {
		n = s.slab.at(n.parent)
	}
	switch n.nhead { // a root's path is head[:nhead] + seg
	case 0:
		return "", true // a one-segment path names no sender
	case 1:
		return s.segs.name(n.seg), true // [organism, sender]: a broadcast's origin
	}
	return s.segs.name(n.head[1]), true
}

// Ancestors returns id, its parent, …, its conversation root; nil if id is
// unknown. It makes Threads a Lineage for the todo registry.
func (t *Threads) Ancestors(id string) []string {
	ids := t.appendAncestorIDs(nil, id)
	if len(ids) == 0 {
		return nil
	}
	out := make([]string, len(ids))
	out[0] = id
	for i := 1; i < len(ids); i++ {
		out[i] = ids[i].String()
	}
	return out
}

// appendAncestorIDs appends id, its parent, …, its conversation root to
// dst, as Ancestors returns them but without formatting a string for each;
// it appends nothing if id is unknown.
func (t *Threads) appendAncestorIDs(dst []uuid.UUID, id string) []uuid.UUID {
	u, err := parseThreadID(id)
	if err != nil {
		return dst
	}
	s, r := t.rlock(u)
	defer s.mu.RUnlock()
	if r == 0 {
		return dst
	}
	n := s.slab.at(r)
	dst = append(dst, u)
	for n.parent != 0 {
		n = s.slab.at(n.parent)
		dst = append(dst, n.id)
	}
	return dst
}

// Touch marks id as used now, postponing its collection. Unknown ids are
// ignored.
func (t *Threads) Touch(id string) {
	u, err := parseThreadID(id)
	if err != nil {
		return
	}
	now := t.cfg.Clock().UnixNano()
	s, r := t.rlock(u)
	if r != 0 {
		s.slab.at(r).touched.Store(now)
	}
	s.mu.RUnlock()
}

// Len returns the number of live threads.
func (t *Threads) Len() int {
	n := 0
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.RLock()
		n += len(s.nodes)
		s.mu.RUnlock()
	}
	return n
}

// DebugDump returns every live thread id mapped to a copy of its path. It
// exposes topology: for privileged/operator use only, never for handlers.
func (t *Threads) DebugDump() map[string][]string {
	out := make(map[string][]string, t.Len())
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.RLock()
		for u, r := range s.nodes {
			out[u.String()] = s.path(r)
		}
		s.mu.RUnlock()
	}
	return out
}
