package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"
)

// WatcherRow is the durable form of one todo-registry watcher.
type WatcherRow struct {
	// ID is the watcher id.
	ID string
	// Thread is the thread the watcher belongs to.
	Thread string
	// Issuer is the listener that registered the watcher.
	Issuer string
	// WaitFor is the payload tag or condition awaited.
	WaitFor string
	// FromListener restricts the awaited message's sender.
	FromListener string
	// Description is the human-readable todo text.
	Description string
	// Raised reports whether the watcher has fired.
	Raised bool
	// TriggeredFrom names what raised it.
	TriggeredFrom string
	// Created is kept exactly (Unix nanoseconds, loaded in UTC).
	Created time.Time
}

// PutWatcher enqueues an insert-or-replace of the watcher row. Writes to
// one watcher sharing a batch are coalesced to their final state.
func (s *Store) PutWatcher(r WatcherRow) error {
	if r.ID == "" || r.Thread == "" {
		return fmt.Errorf("%w: watcher row needs id and thread (id %q, thread %q)", ErrInvalid, r.ID, r.Thread)
	}
	created, err := encodeTime("created", r.Created)
	if err != nil {
		return err
	}
	return s.enqueueAsync(&op{kind: opPut, name: "put watcher", table: watchersTable, key: r.ID,
		group: r.ID, row: []any{r.ID, r.Thread, r.Issuer, r.WaitFor, r.FromListener, r.Description,
			r.Raised, r.TriggeredFrom, created}})
}

// DeleteWatcher enqueues the deletion of one watcher (absent ids are
// ignored).
func (s *Store) DeleteWatcher(id string) error {
	return s.enqueueAsync(&op{kind: opDelete, name: "delete watcher", table: watchersTable,
		groups: []string{id}})
}

// LoadWatchers returns every committed watcher ordered by creation time and
// id. Like LoadThreads (a restart waits for both), it sizes its slice by a
// count, reuses its scan targets and sorts only rows out of order.
func (s *Store) LoadWatchers() ([]WatcherRow, error) {
	if err := s.readable(); err != nil {
		return nil, err
	}
	ctx := context.Background()
	out := slices.Grow([]WatcherRow(nil), s.countHint(ctx, watchersTable)) // nil when empty
	var (
		r       WatcherRow
		created sql.NullInt64
	)
	err := eachRow(ctx, s.rdb, `SELECT id, thread, issuer, wait_for, from_listener, description, raised, triggered_from,
		created_ns FROM watchers`, nil, func(rows *sql.Rows) error {
		if err := rows.Scan(&r.ID, &r.Thread, &r.Issuer, &r.WaitFor, &r.FromListener, &r.Description, &r.Raised,
			&r.TriggeredFrom, &created); err != nil {
			return err
		}
		r.Created = decodeTime(created)
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: load watchers: %w", err)
	}
	sortByCreation(out, func(w *WatcherRow) (time.Time, string) { return w.Created, w.ID })
	return out, nil
}
