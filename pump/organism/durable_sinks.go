package organism

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// storeSinks persists the kernel registries' changes: it is the
// registry.ThreadSink, registry.TodoSink and registry.SlotSink of a durable
// organism. Writes are asynchronous (the store's writer orders them with the
// journal); failures are logged.
type storeSinks struct {
	s   *store.Store
	log *slog.Logger
	// segs is set once the sinks restored the store's kernel state into
	// the registries (restoreRegistries): from then on every committed row
	// has its registry entry, so a thread or history that begins has no
	// row yet (store.CreateThread, store.AppendSlot), and segs knows every
	// thread with context segments in the store (segmentThreads). Without
	// it rows are put and deleted unconditionally.
	segs *segmentThreads
}

// segmentThreads is the set of threads that may have context segments in
// the store: those whose segments were restored or put since. A history
// deleted without segments needs no DELETE on context_segments — most
// histories never have any, and that DELETE was a probe per ended or
// evicted thread on the bus. It is valid only from a restore on (the
// restore deletes the segments it could not restore), and is used with the
// context buffer locked (SlotSink and SegmentSink are called so), so its
// own lock is never contended.
type segmentThreads struct {
	mu sync.Mutex
	m  map[string]struct{}
}

// add records that thread has segments.
func (t *segmentThreads) add(thread string) {
	t.mu.Lock()
	t.m[thread] = struct{}{}
	t.mu.Unlock()
}

// remove forgets thread and reports whether it may have had segments.
func (t *segmentThreads) remove(thread string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.m[thread]
	delete(t.m, thread)
	return ok
}

func (k storeSinks) check(op string, err error) {
	switch {
	case errors.Is(err, store.ErrClosed):
		// A handler the pump abandoned at shutdown changed the state
		// after the organism closed its store: the change is one the
		// next start does not need (its turn is handled again).
		k.log.Debug("durable state: " + op + " skipped: the store closed at shutdown before an abandoned handler ended")
	case err != nil:
		k.log.Error("durable state: "+op, "error", err)
	}
}

// StateSinks returns the sinks a durable organism installs in its kernel
// registries: each change of the thread registry, todo registry and context
// buffer becomes an asynchronous write to s (failures are logged to log, or
// slog.Default when nil). The store coalesces a batch's writes to their
// final state.
func StateSinks(s *store.Store, log *slog.Logger) (registry.ThreadSink, registry.TodoSink, registry.SlotSink) {
	if log == nil {
		log = slog.Default()
	}
	k := storeSinks{s: s, log: log}
	return k, k, k
}

// ThreadCreated persists a new thread node. The registry tells the sink of
// a node's end after its creation, and of an earlier node of the same id's
// end before (a conversation begun again under its id): the row is created
// (store.CreateThread).
func (k storeSinks) ThreadCreated(r registry.ThreadRecord) {
	row := threadRow(r)
	if k.segs != nil {
		k.check("put thread", k.s.CreateThread(row))
		return
	}
	k.check("put thread", k.s.PutThread(row))
}

// ThreadsTouched keeps the last activity of threads used since their last
// report (registry.ActivitySink): their rows are written again.
func (k storeSinks) ThreadsTouched(recs []registry.ThreadRecord) {
	for _, r := range recs {
		k.check("put thread", k.s.PutThread(threadRow(r)))
	}
}

// threadRow is r as the store keeps it; threadRecord is its inverse.
func threadRow(r registry.ThreadRecord) store.ThreadRow {
	return store.ThreadRow{ID: r.ID, Parent: r.Parent, Path: r.Path, Created: r.Created, Touched: r.Touched,
		Ref: r.Ref, Profile: r.Profile, Hops: r.Hops, Spent: r.Spent, Awaiting: r.Awaiting}
}

// threadRecord is the registry record of store row r (see threadRow).
func threadRecord(r store.ThreadRow) registry.ThreadRecord {
	return registry.ThreadRecord{ID: r.ID, Parent: r.Parent, Path: r.Path, Created: r.Created, Touched: r.Touched,
		Ref: r.Ref, Profile: r.Profile, Hops: r.Hops, Spent: r.Spent, Awaiting: r.Awaiting}
}

// ThreadsEnded deletes ended thread nodes.
func (k storeSinks) ThreadsEnded(ids []string) { k.check("delete threads", k.s.DeleteThreads(ids)) }

// WatcherPut persists a registered or raised todo watcher.
func (k storeSinks) WatcherPut(w registry.Watcher) {
	k.check("put watcher", k.s.PutWatcher(store.WatcherRow{ID: w.ID, Thread: w.ThreadID, Issuer: w.Issuer,
		WaitFor: w.WaitFor, FromListener: w.FromListener, Description: w.Description, Raised: w.Raised,
		TriggeredFrom: w.TriggeredFrom, Created: w.Created}))
}

// WatcherClosed deletes a closed watcher.
func (k storeSinks) WatcherClosed(id string) { k.check("delete watcher", k.s.DeleteWatcher(id)) }

// SlotAppended persists a context-buffer slot. The buffer tells the sink of
// a deleted history before a history of the same thread begins again, so
// slot 0 begins the thread's rows (store.AppendSlot). A slot's bytes are
// never modified once in the buffer (registry.SlotSink), so the store keeps
// them without a copy (store.AppendSharedSlot).
func (k storeSinks) SlotAppended(s registry.Slot) {
	row := store.SlotRow{Thread: s.ThreadID, Index: s.Index, From: s.From, To: s.To, PayloadType: s.PayloadType,
		Raw: s.Raw, Time: s.Time, OwnName: s.OwnName, IsSelfCall: s.IsSelfCall, InReplyTo: s.InReplyTo,
		Seq: s.Seq}
	if k.segs != nil {
		k.check("put slot", k.s.AppendSharedSlot(row))
		return
	}
	k.check("put slot", k.s.PutSlot(row))
}

// ThreadDeleted deletes a thread's context history and its segments (when
// it may have any).
func (k storeSinks) ThreadDeleted(id string) {
	k.check("delete slots", k.s.DeleteSlots(id))
	if k.segs == nil || k.segs.remove(id) {
		k.check("delete segments", k.s.DeleteSegments(id))
	}
}

// restoreRegistries loads the persisted kernel state into fresh registries
// whose sinks are k.
func (k *storeSinks) restoreRegistries(threads *registry.Threads, todos *registry.TodoRegistry,
	cb *registry.ContextBuffer) error {
	// A restart with many live threads spends most of its time before
	// /health answers here. The three registries share nothing while they
	// are restored (none has subscribers yet), so each is read, on its own
	// connection of the read pool, and restored at once on its own
	// goroutine: the threads, the largest, do not wait for the watchers.
	var (
		slots      []registry.Slot
		segs       *segmentThreads
		terr, werr error
		wg         sync.WaitGroup
	)
	wg.Add(2)
	go func() { defer wg.Done(); terr = k.restoreThreads(threads) }()
	go func() { defer wg.Done(); werr = k.restoreWatchers(todos) }()
	slots, segs, serr := k.restoreHistories(cb)
	wg.Wait()
	if err := errors.Join(terr, werr, serr); err != nil {
		return err
	}
	k.segs = segs // once no registry calls the sinks concurrently
	// A history whose thread is gone was kept for its conversation to
	// continue (pump: conversations continue): it stays kept.
	var ended []string
	seen := map[string]bool{}
	for _, s := range slots {
		if !seen[s.ThreadID] && !threads.Known(s.ThreadID) {
			ended = append(ended, s.ThreadID)
		}
		seen[s.ThreadID] = true
	}
	cb.Retain(ended...)
	return nil
}

// restoreThreads loads the thread rows into threads.
func (k *storeSinks) restoreThreads(threads *registry.Threads) error {
	rows, err := k.s.LoadThreads()
	if err != nil {
		return err
	}
	recs := make([]registry.ThreadRecord, len(rows))
	for i, r := range rows {
		recs[i] = threadRecord(r)
	}
	return threads.Restore(recs)
}

// restoreWatchers loads the watcher rows into todos.
func (k *storeSinks) restoreWatchers(todos *registry.TodoRegistry) error {
	rows, err := k.s.LoadWatchers()
	if err != nil {
		return err
	}
	ws := make([]registry.Watcher, len(rows))
	for i, r := range rows {
		ws[i] = registry.Watcher{ID: r.ID, ThreadID: r.Thread, Issuer: r.Issuer, WaitFor: r.WaitFor,
			FromListener: r.FromListener, Description: r.Description, Raised: r.Raised,
			TriggeredFrom: r.TriggeredFrom, Created: r.Created}
	}
	return todos.Restore(ws)
}

// restoreHistories loads the context slots, segments and expiry notes
// into cb and returns the slots and the threads with segments (for k.segs).
func (k *storeSinks) restoreHistories(cb *registry.ContextBuffer) ([]registry.Slot, *segmentThreads, error) {
	rows, err := k.s.LoadSlots()
	if err != nil {
		return nil, nil, err
	}
	slots := make([]registry.Slot, len(rows))
	for i, r := range rows {
		slots[i] = registry.Slot{Index: r.Index, ThreadID: r.Thread, From: r.From, To: r.To, PayloadType: r.PayloadType,
			Raw: r.Raw, Time: r.Time, OwnName: r.OwnName, IsSelfCall: r.IsSelfCall, InReplyTo: r.InReplyTo,
			Seq: r.Seq}
	}
	if err := cb.Restore(slots); err != nil {
		return nil, nil, err
	}
	segs, err := k.restoreSegments(cb)
	if err != nil {
		return nil, nil, err
	}
	if err := k.restoreExpiries(cb); err != nil {
		return nil, nil, err
	}
	return slots, segs, nil
}

// DurableRegistries builds the kernel registries of a durable organism
// over s, as New does for an organism with a data directory: their sinks
// persist every change to s (failures are logged to log, or slog.Default
// when nil), and s's kernel state is restored into them first. Restored
// sinks know that a thread or history that begins has no row yet and which
// threads have context segments, so they write less than StateSinks' do:
// benchmarks use this to measure what a durable organism writes. tc and cc
// configure the registries; their Sink fields are set here.
func DurableRegistries(s *store.Store, log *slog.Logger, tc registry.ThreadsConfig, cc registry.ContextConfig) (
	*registry.Threads, *registry.TodoRegistry, *registry.ContextBuffer, error) {
	if log == nil {
		log = slog.Default()
	}
	k := &storeSinks{s: s, log: log}
	tc.Sink = k
	threads := registry.NewThreads(tc)
	todos := registry.NewTodoRegistry(registry.TodoConfig{Lineage: threads, Clock: tc.Clock, Sink: k})
	cc.Sink = k
	cb, err := registry.NewContextBuffer(cc)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := k.restoreRegistries(threads, todos, cb); err != nil {
		return nil, nil, nil, fmt.Errorf("organism: restore kernel state from %s: %w", s.Dir(), err)
	}
	return threads, todos, cb, nil
}
