package registry

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// ErrInvalidWatcher is returned by TodoRegistry.Restore for a persisted
// watcher without an id or thread, or with a duplicate id.
var ErrInvalidWatcher = errors.New("invalid persisted watcher")

// Lineage reports a thread's ancestry: the thread itself, its parent, …, its
// conversation root (nil when the thread is unknown). Threads satisfies it.
type Lineage interface {
	Ancestors(id string) []string
}

// LineageFunc adapts a function to Lineage.
type LineageFunc func(id string) []string

// Ancestors calls f(id).
func (f LineageFunc) Ancestors(id string) []string { return f(id) }

// Watcher is a todo registered by an agent: raise its eyebrow when a payload
// of type WaitFor arrives (from FromListener, when set) on its thread or on a
// thread descended from it.
type Watcher struct {
	// ID is the watcher's UUID, quoted back in <TodoComplete><Id>.
	ID string
	// ThreadID is the thread the watcher was registered on.
	ThreadID string
	// Issuer is the agent that registered it, as given.
	Issuer string
	// WaitFor is the awaited payload type, lower-cased.
	WaitFor string
	// FromListener is the required sender, lower-cased; "" accepts anyone.
	FromListener string
	// Description is the issuer's note, as given.
	Description string
	// Raised reports whether a matching payload has arrived.
	Raised bool
	// TriggeredBy is the payload that raised the watcher (not persisted).
	TriggeredBy any
	// TriggeredFrom is the sender of that payload.
	TriggeredFrom string
	// Created is when the watcher was registered.
	Created time.Time
}

// TodoSink is told about every watcher stored or changed and every watcher
// closed, in order. The store implements it for durability.
type TodoSink interface {
	// WatcherPut is called when a watcher is registered or raised.
	WatcherPut(w Watcher)
	// WatcherClosed is called when a watcher is removed.
	WatcherClosed(id string)
}

// TodoConfig configures a TodoRegistry.
type TodoConfig struct {
	// Lineage lets a watcher see payloads on threads its chain spawns; nil
	// restricts matching to the watcher's own thread.
	Lineage Lineage `yaml:"-"`
	// Sink, when non-nil, is told about every change. It is called with the
	// registry locked and must not call back into it.
	Sink TodoSink `yaml:"-"`
	// Clock returns the current time (default time.Now).
	Clock func() time.Time `yaml:"-"`
}

// TodoRegistry holds todo watchers by thread. It is safe for concurrent use.
type TodoRegistry struct {
	lineage Lineage
	sink    TodoSink
	clock   func() time.Time

	mu       sync.Mutex
	byID     map[string]*Watcher
	byThread map[string][]*Watcher // registration order
}

// NewTodoRegistry returns an empty registry.
func NewTodoRegistry(cfg TodoConfig) *TodoRegistry {
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	return &TodoRegistry{
		lineage:  cfg.Lineage,
		sink:     cfg.Sink,
		clock:    cfg.Clock,
		byID:     make(map[string]*Watcher),
		byThread: make(map[string][]*Watcher),
	}
}

// Register adds a watcher for issuer on thread and returns its id. waitFor
// and fromListener are matched case-insensitively ("" fromListener accepts
// any sender).
func (r *TodoRegistry) Register(thread, issuer, waitFor, fromListener, description string) string {
	w := &Watcher{
		ID:           newWatcherID(),
		ThreadID:     thread,
		Issuer:       issuer,
		WaitFor:      strings.ToLower(waitFor),
		FromListener: strings.ToLower(fromListener),
		Description:  description,
		Created:      r.clock(),
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.add(w)
	if r.sink != nil {
		r.sink.WatcherPut(*w)
	}
	return w.ID
}

// Check raises every un-raised watcher that a payload of payloadType from
// sender from, arriving on thread, satisfies, and returns copies of them. A
// watcher matches when it sits on thread or on one of its ancestors, its
// WaitFor equals payloadType and its FromListener (if set) equals from — both
// exact and case-insensitive. A watcher is raised only once.
func (r *TodoRegistry) Check(thread, payloadType, from string, payload any) []*Watcher {
	var out []*Watcher
	r.check(thread, payloadType, from, payload, func(w *Watcher) { out = append(out, clone(w)) })
	return out
}

// Raise is Check for a caller that does not read the raised watchers (the
// pump, on every delivery): it returns how many it raised, without copying
// them.
func (r *TodoRegistry) Raise(thread, payloadType, from string, payload any) int {
	return r.check(thread, payloadType, from, payload, nil)
}

// check is Check, calling raised (when set) with each watcher it raises,
// and returns how many it raised.
func (r *TodoRegistry) check(thread, payloadType, from string, payload any, raised func(*Watcher)) int {
	r.mu.Lock()
	empty := len(r.byThread) == 0
	r.mu.Unlock()
	if empty { // the common case: no watcher anywhere, no lineage walk
		return 0
	}
	if th, ok := r.lineage.(*Threads); ok {
		// The registry's own lineage: walk the parsed ids, each looked up
		// by its wire form on the stack, instead of a string per ancestor.
		var buf [8]uuid.UUID
		ids := th.appendAncestorIDs(buf[:0], thread) // outside r.mu: Threads takes its own lock
		if len(ids) > 0 {
			r.mu.Lock()
			defer r.mu.Unlock()
			n := 0
			var key [36]byte
			for _, id := range ids {
				formatThreadID(&key, id)
				n += r.raise(r.byThread[string(key[:])], payloadType, from, payload, raised)
			}
			return n
		}
	}
	threads := []string{thread}
	if r.lineage != nil { // outside r.mu: Lineage takes its own lock
		if a := r.lineage.Ancestors(thread); len(a) > 0 {
			threads = a
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, tid := range threads {
		n += r.raise(r.byThread[tid], payloadType, from, payload, raised)
	}
	return n
}

// raise raises the un-raised watchers of ws that a payload of payloadType
// from from satisfies (see Check), calling raised (when set) with each,
// and returns how many it raised. Callers hold r.mu.
func (r *TodoRegistry) raise(ws []*Watcher, payloadType, from string, payload any, raised func(*Watcher)) int {
	n := 0
	for _, w := range ws {
		if w.Raised || !strings.EqualFold(w.WaitFor, payloadType) {
			continue
		}
		if w.FromListener != "" && !strings.EqualFold(w.FromListener, from) {
			continue
		}
		w.Raised, w.TriggeredBy, w.TriggeredFrom = true, payload, from
		if r.sink != nil {
			r.sink.WatcherPut(*w)
		}
		if raised != nil {
			raised(w)
		}
		n++
	}
	return n
}

// RaisedFor returns copies of the raised watchers on thread whose issuer is
// agent (case-insensitive), in registration order.
func (r *TodoRegistry) RaisedFor(thread, agent string) []*Watcher {
	return r.issuedBy(thread, agent, true)
}

// PendingFor returns copies of the un-raised watchers on thread whose issuer
// is agent (case-insensitive), in registration order.
func (r *TodoRegistry) PendingFor(thread, agent string) []*Watcher {
	return r.issuedBy(thread, agent, false)
}

// Get returns a copy of the watcher with the given id.
func (r *TodoRegistry) Get(id string) (*Watcher, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.byID[id]
	if w == nil {
		return nil, false
	}
	return clone(w), true
}

// Close removes the watcher with the given id and reports whether it existed.
func (r *TodoRegistry) Close(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.byID[id]
	if w == nil {
		return false
	}
	delete(r.byID, id)
	ws := slices.DeleteFunc(r.byThread[w.ThreadID], func(x *Watcher) bool { return x == w })
	if len(ws) == 0 {
		delete(r.byThread, w.ThreadID)
	} else {
		r.byThread[w.ThreadID] = ws
	}
	if r.sink != nil {
		r.sink.WatcherClosed(id)
	}
	return true
}

// CloseAllForThread removes every watcher registered on thread and returns
// how many there were.
func (r *TodoRegistry) CloseAllForThread(thread string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closeThread(thread)
}

// ThreadsEnded closes the watchers of every ended thread. Subscribe it with
// Threads.OnEnd.
func (r *TodoRegistry) ThreadsEnded(ids []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		r.closeThread(id)
	}
}

// Clear removes every watcher.
func (r *TodoRegistry) Clear() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id := range r.byThread {
		r.closeThread(id)
	}
}

// Len returns the number of open watchers.
func (r *TodoRegistry) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byID)
}

// Restore adds persisted watchers (TriggeredBy is not persisted and stays
// nil). It is all-or-nothing: a watcher without id or thread, or whose id is
// duplicated or already open, fails with ErrInvalidWatcher. The sink is not
// called.
func (r *TodoRegistry) Restore(ws []Watcher) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := make(map[string]bool, len(ws))
	for i, w := range ws {
		switch {
		case w.ID == "" || w.ThreadID == "":
			return fmt.Errorf("registry: restore watcher %d: missing id or thread: %w", i, ErrInvalidWatcher)
		case seen[w.ID] || r.byID[w.ID] != nil:
			return fmt.Errorf("registry: restore watcher %s: duplicate id: %w", w.ID, ErrInvalidWatcher)
		}
		seen[w.ID] = true
	}
	if len(r.byID) == 0 && len(r.byThread) == 0 {
		// A restart restores thousands at once: the maps are sized for
		// them instead of growing step by step.
		r.byID = make(map[string]*Watcher, len(ws))
		r.byThread = make(map[string][]*Watcher, len(ws))
	}
	for _, w := range ws {
		w.WaitFor, w.FromListener = strings.ToLower(w.WaitFor), strings.ToLower(w.FromListener)
		r.add(&w)
	}
	return nil
}

// add indexes w. Callers hold r.mu.
func (r *TodoRegistry) add(w *Watcher) {
	r.byID[w.ID] = w
	r.byThread[w.ThreadID] = append(r.byThread[w.ThreadID], w)
}

// closeThread removes thread's watchers. Callers hold r.mu.
func (r *TodoRegistry) closeThread(thread string) int {
	ws := r.byThread[thread]
	delete(r.byThread, thread)
	for _, w := range ws {
		delete(r.byID, w.ID)
		if r.sink != nil {
			r.sink.WatcherClosed(w.ID)
		}
	}
	return len(ws)
}

// issuedBy returns copies of thread's watchers by agent in the given state.
func (r *TodoRegistry) issuedBy(thread, agent string, raised bool) []*Watcher {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*Watcher
	for _, w := range r.byThread[thread] {
		if w.Raised == raised && strings.EqualFold(w.Issuer, agent) {
			out = append(out, clone(w))
		}
	}
	return out
}

// clone returns a copy of w that the caller may keep.
func clone(w *Watcher) *Watcher {
	c := *w
	return &c
}

// newWatcherID returns a new watcher id: a UUID version 7, whose leading
// bits are the time. Watchers persisted by a durable organism are keyed by
// their id, so ids in creation order put the rows written together on one
// page of the key's index — a random id cost a WAL page per watcher. The
// id stays opaque and unique (74 random bits per millisecond).
func newWatcherID() string {
	id, err := uuid.NewV7()
	if err != nil { // the system's randomness failed: any unique id will do
		return uuid.NewString()
	}
	return id.String()
}

// Watches reports whether a watcher sits on thread, raised or not: the
// thread must live on for it (Threads.EndSpent's keep).
func (r *TodoRegistry) Watches(thread string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byThread[thread]) > 0
}
