package store

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// readTx runs fn in one read transaction of the read pool, so everything
// it reads comes from one snapshot.
func (r *Reader) readTx(fn func(ctx context.Context, tx *sql.Tx) error) error {
	return r.read(func(db *sql.DB) error {
		ctx := context.Background()
		tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return fmt.Errorf("store: read journal: %w", err)
		}
		defer tx.Rollback() //nolint:errcheck // read-only
		return fn(ctx, tx)
	})
}

// Tail returns the last n committed entries in ascending seq order.
func (r *Reader) Tail(n int) ([]Entry, error) {
	if n <= 0 {
		return nil, nil
	}
	var out []Entry
	err := r.readTx(func(ctx context.Context, tx *sql.Tx) error {
		return scanBackward(ctx, tx, func(s *segment) error {
			for i := len(s.entries) - 1; i >= 0 && len(out) < n; i-- {
				out = append(out, s.entries[i])
			}
			if len(out) == n {
				return errStopScan
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	slices.Reverse(out)
	return out, nil
}

// After returns up to limit committed entries with seq greater than seq, in
// ascending order; limit <= 0 means no limit.
func (r *Reader) After(seq int64, limit int) ([]Entry, error) {
	var out []Entry
	err := r.readTx(func(ctx context.Context, tx *sql.Tx) error {
		return scanForward(ctx, tx, seq, func(s *segment) error {
			for i := range s.entries {
				if limit > 0 && len(out) == limit {
					return errStopScan
				}
				if s.entries[i].Seq > seq {
					out = append(out, s.entries[i])
				}
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Thread returns the committed entries of one thread in seq order.
func (r *Reader) Thread(id string) ([]Entry, error) {
	return r.lookup(keyThread, id)
}

// Conversation returns the committed entries of one conversation in seq
// order.
func (r *Reader) Conversation(id string) ([]Entry, error) {
	return r.lookup(keyConversation, id)
}

// ThreadEnds returns, for every thread of the journal (dead letters without a
// thread under ""), the seq of its last committed entry, in one pass over the
// journal. Reading the journal in seq order with After and closing each
// thread at its last seq exports every thread without a lookup per thread.
func (r *Reader) ThreadEnds() (map[string]int64, error) {
	out := map[string]int64{}
	err := r.readTx(func(ctx context.Context, tx *sql.Tx) error {
		return scanForward(ctx, tx, 0, func(s *segment) error {
			for i := range s.entries {
				out[s.entries[i].Thread] = s.entries[i].Seq
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("store: thread ends: %w", err)
	}
	return out, nil
}

// Count returns the number of journal entries (pruned entries excluded).
func (r *Reader) Count() (int64, error) {
	return r.queryInt(`SELECT coalesce(sum(entries), 0) FROM journal_segments`)
}

// LastSeq returns the highest committed sequence number ever assigned, even
// if that row has since been pruned; 0 for an empty journal.
func (r *Reader) LastSeq() (int64, error) {
	return r.queryInt(`SELECT high_seq FROM journal_state WHERE id = 1`)
}

// queryInt runs a one-integer query on the read pool.
func (r *Reader) queryInt(query string, args ...any) (int64, error) {
	var n int64
	err := r.read(func(db *sql.DB) error {
		if err := db.QueryRowContext(context.Background(), query, args...).Scan(&n); err != nil {
			return fmt.Errorf("store: %s: %w", query, err)
		}
		return nil
	})
	return n, err
}

// ThreadFilter narrows Threads and Conversations. Zero fields do not filter.
type ThreadFilter struct {
	// Conversation keeps threads of this conversation.
	Conversation string
	// IDPrefix keeps the threads (Conversations: the conversations) whose id
	// starts with this prefix, compared case-insensitively.
	IDPrefix string
	// Participant keeps threads with a message from or to this name.
	Participant string
	// PayloadTag keeps threads with a message of this payload tag.
	PayloadTag string
	// Since keeps threads whose last message is at or after Since.
	Since time.Time
	// Until keeps threads whose first message is before Until.
	Until time.Time
}

// ThreadSummary describes one thread (or, from Conversations, one
// conversation) of the journal.
type ThreadSummary struct {
	// ID is the thread id (the conversation id).
	ID string
	// Conversation is the conversation of the thread's last message.
	Conversation string
	// First and Last are the times of the thread's first and last message.
	First, Last time.Time
	// Messages is the number of journaled messages in the thread.
	Messages int64
	// LastFrom and LastTo are the sender and addressee of the last message.
	LastFrom, LastTo string
	// PayloadTags are the distinct payload tags seen, sorted.
	PayloadTags []string
}

// Threads summarises journal threads, most recently active first, skipping
// offset threads and returning at most limit (limit <= 0: no limit).
func (r *Reader) Threads(limit, offset int, filter ThreadFilter) ([]ThreadSummary, error) {
	return r.summaries(false, limit, offset, filter)
}

// Conversations summarises journal conversations like Threads summarises
// threads: each summary's ID is a conversation id and its counts cover every
// thread of the conversation. Entries without a conversation (dead letters
// of unreadable input) are left out.
func (r *Reader) Conversations(limit, offset int, filter ThreadFilter) ([]ThreadSummary, error) {
	return r.summaries(true, limit, offset, filter)
}

// summaries groups the journal by thread or, when byConversation, by
// conversation, for Threads and Conversations, in one pass over the
// journal.
func (r *Reader) summaries(byConversation bool, limit, offset int, filter ThreadFilter) ([]ThreadSummary, error) {
	type group struct {
		ThreadSummary
		last   int64 // seq of the last entry
		person bool
		tag    bool
		tags   map[string]struct{}
	}
	groups := map[string]*group{}
	prefix := strings.ToLower(filter.IDPrefix)
	err := r.readTx(func(ctx context.Context, tx *sql.Tx) error {
		return scanForward(ctx, tx, 0, func(s *segment) error {
			for i := range s.entries {
				e := &s.entries[i]
				id := e.Thread
				if byConversation {
					id = e.Conversation
					if id == "" {
						continue
					}
				}
				if filter.Conversation != "" && e.Conversation != filter.Conversation {
					continue
				}
				if prefix != "" && (len(id) < len(prefix) || strings.ToLower(id[:len(prefix)]) != prefix) {
					continue
				}
				g := groups[id]
				if g == nil {
					g = &group{ThreadSummary: ThreadSummary{ID: id, First: e.Time}, tags: map[string]struct{}{}}
					groups[id] = g
				}
				g.Messages++
				g.last = e.Seq
				g.Conversation, g.LastFrom, g.LastTo = e.Conversation, e.From, e.To
				if e.Time.Before(g.First) {
					g.First = e.Time
				}
				if e.Time.After(g.Last) {
					g.Last = e.Time
				}
				if e.PayloadTag != "" {
					g.tags[e.PayloadTag] = struct{}{}
				}
				g.person = g.person || e.From == filter.Participant || e.To == filter.Participant
				g.tag = g.tag || e.PayloadTag == filter.PayloadTag
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("store: summarise: %w", err)
	}
	var kept []*group
	for _, g := range groups {
		switch {
		case filter.Participant != "" && !g.person,
			filter.PayloadTag != "" && !g.tag,
			!filter.Since.IsZero() && g.Last.Before(filter.Since),
			!filter.Until.IsZero() && !g.First.Before(filter.Until):
			continue
		}
		kept = append(kept, g)
	}
	slices.SortFunc(kept, func(a, b *group) int { return cmp.Compare(b.last, a.last) })
	offset = min(max(offset, 0), len(kept))
	kept = kept[offset:]
	if limit > 0 && limit < len(kept) {
		kept = kept[:limit]
	}
	var out []ThreadSummary
	for _, g := range kept {
		ts := g.ThreadSummary
		ts.PayloadTags = slices.Sorted(maps.Keys(g.tags))
		out = append(out, ts)
	}
	return out, nil
}

// Undelivered returns, in seq order, the committed Message entries that
// reached a listener (Listener set) and have no delivery mark: after a
// restart these are the messages whose handling may not have finished.
func (r *Reader) Undelivered() ([]Entry, error) {
	var out []Entry
	err := r.scanUndelivered(0, func(e *Entry) error {
		out = append(out, *e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
