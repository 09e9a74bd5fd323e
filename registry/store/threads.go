package store

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"
)

// ThreadRow is the durable form of one thread-registry entry: an opaque id
// and its path of listener names (segments are kept whole; names may
// contain dots).
type ThreadRow struct {
	// ID is the thread UUID.
	ID string
	// Parent is the id of the thread this one was forked from, if any.
	Parent string
	// Path is the chain of listener names, stored as a JSON array.
	Path []string
	// Created and Touched are kept exactly (Unix nanoseconds, loaded in UTC).
	Created, Touched time.Time
	// Ref is the correlation ref the thread was opened with ("" for none).
	Ref string
	// Profile is the thread's security profile ("" for none), fixed when
	// it was created: a restart restores it, so no restart widens a thread.
	Profile string
	// Hops is how many hops the thread's conversation made before it
	// entered the organism (a peer organism's call; registry.JoinAsAt): a
	// restart restores it, so max_chain_depth still counts them.
	Hops int
	// Spent and Awaiting are the thread's lifetime marks
	// (registry.ThreadRecord): a restart that finds a spent thread of a
	// conversation in flight ends it with the conversation, not the TTL.
	// Kept in one column, marks (threadSpent, threadAwaiting).
	Spent, Awaiting bool
}

// The bits of threads.marks.
const (
	threadSpent    = 1
	threadAwaiting = 2
)

// encodeMarks returns t's marks as threads.marks holds them.
func (t ThreadRow) encodeMarks() int64 {
	var m int64
	if t.Spent {
		m |= threadSpent
	}
	if t.Awaiting {
		m |= threadAwaiting
	}
	return m
}

// PutThread enqueues an insert-or-replace of the thread row. Writes to one
// thread row that share a batch are coalesced: only the final state is
// written, and a row put and deleted in one batch is not written at all.
func (s *Store) PutThread(t ThreadRow) error { return s.putThread(t, false) }

// CreateThread is PutThread for a thread that begins: no row of its id is
// committed but one an earlier DeleteThreads deletes (a new id, or an
// ended thread begun again under its id). A thread created and ended within
// one batch then costs no statement at all, not even its DELETE. Were a
// row of the id committed nonetheless, it could outlive such a deletion.
func (s *Store) CreateThread(t ThreadRow) error { return s.putThread(t, true) }

// putThread enqueues the upsert of t (fresh: it begins its group).
func (s *Store) putThread(t ThreadRow, fresh bool) error {
	if t.ID == "" {
		return fmt.Errorf("%w: thread row without id", ErrInvalid)
	}
	pathJSON, err := marshalPath(t.Path)
	if err != nil {
		return fmt.Errorf("%w: thread %s path: %w", ErrInvalid, t.ID, err)
	}
	created, err := encodeTime("created", t.Created)
	if err != nil {
		return err
	}
	touched, err := encodeTime("touched", t.Touched)
	if err != nil {
		return err
	}
	return s.enqueueAsync(&op{kind: opPut, name: "put thread", table: threadsTable, key: t.ID, fresh: fresh,
		group: t.ID, row: []any{t.ID, t.Parent, pathJSON, created, touched, t.Ref, t.Profile, int64(t.Hops),
			t.encodeMarks()}})
}

// DeleteThreads enqueues the deletion of the given thread rows. It does not
// touch their watchers or slots (see DeleteWatcher, DeleteSlots).
func (s *Store) DeleteThreads(ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	return s.enqueueAsync(&op{kind: opDelete, name: "delete threads", table: threadsTable,
		groups: slices.Clone(ids)})
}

// LoadThreads returns every committed thread row ordered by creation time
// and id. Rows with the same path share its slice: callers treat Path as
// read-only.
//
// A restart spends most of its time before /health answers here and in
// LoadWatchers (one row per live thread), so the loop allocates only what
// the rows keep: the slice is sized by a count first, the scan targets are
// reused, a path's text is decoded once, and the sort is skipped when the
// rows came back in order (they usually do: rows are inserted as threads
// are created).
func (s *Store) LoadThreads() ([]ThreadRow, error) {
	if err := s.readable(); err != nil {
		return nil, err
	}
	ctx := context.Background()
	out := slices.Grow([]ThreadRow(nil), s.countHint(ctx, threadsTable)) // nil when empty
	var (
		id, parent, path, ref, profile string
		created, touched               sql.NullInt64
		hops                           int
		marks                          int64
		paths                          = map[string][]string{}
	)
	err := eachRow(ctx, s.rdb, `SELECT id, parent, path, created_ns, touched_ns, ref, profile, hops, marks FROM threads`,
		nil, func(rows *sql.Rows) error {
			if err := rows.Scan(&id, &parent, &path, &created, &touched, &ref, &profile, &hops, &marks); err != nil {
				return err
			}
			p, ok := paths[path]
			if !ok {
				var err error
				if p, err = unmarshalPath(path); err != nil {
					return fmt.Errorf("thread %s: path: %w", id, err)
				}
				paths[path] = p
			}
			out = append(out, ThreadRow{ID: id, Parent: parent, Path: p, Created: decodeTime(created),
				Touched: decodeTime(touched), Ref: ref, Profile: profile, Hops: hops,
				Spent: marks&threadSpent != 0, Awaiting: marks&threadAwaiting != 0})
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("store: load threads: %w", err)
	}
	sortByCreation(out, func(t *ThreadRow) (time.Time, string) { return t.Created, t.ID })
	return out, nil
}

// sortByCreation sorts rows in creation order, then by id, unless they are
// in order already (they usually are: rows are inserted as they are
// created). Sorted here: SQLite's sorter costs a restart with many live
// threads several times as much.
func sortByCreation[T any](rows []T, key func(*T) (time.Time, string)) {
	byCreation := func(a, b T) int {
		at, aid := key(&a)
		bt, bid := key(&b)
		return cmp.Or(at.Compare(bt), strings.Compare(aid, bid))
	}
	if !slices.IsSortedFunc(rows, byCreation) {
		slices.SortFunc(rows, byCreation)
	}
}
