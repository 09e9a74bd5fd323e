package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"
)

// The newest page of threads (conversations) without a filter — what every
// open dashboard polls — is read without grouping the journal: the
// journal is walked from its end, newestScanChunk rows at a time and
// reading only seq and the id, until offset+limit distinct ids are found;
// then the page's ids alone are summarised from their entries, found
// through the lookup keys (lookupManyIn). Its cost follows the page (how
// far back its ids' last entries are, how many entries they have), plus
// one pass over the lookup keys (16 bytes per journal row), instead of
// every journal row (BenchmarkThreadSummaries).

// newestScanChunk is how many journal rows newestIDs reads per query.
const newestScanChunk = 1024

// ThreadEntries returns the committed entries of each of the threads ids,
// by id and in seq order (a thread without entries is absent), in one
// pass over the lookup keys rather than one Thread call per id.
func (r *Reader) ThreadEntries(ids []string) (map[string][]Entry, error) {
	return r.lookupMany(keyThread, ids)
}

// ConversationEntries is ThreadEntries for conversations: every entry of
// each conversation of ids, by conversation.
func (r *Reader) ConversationEntries(ids []string) (map[string][]Entry, error) {
	return r.lookupMany(keyConversation, ids)
}

// newestSummaries is summaries without a filter and with a limit (> 0):
// the page of the ids (key: thread or conversation) most recently active.
func (r *Reader) newestSummaries(key string, limit, offset int) ([]ThreadSummary, error) {
	kind := keyThread
	if key == "conversation" {
		kind = keyConversation
	}
	offset = max(offset, 0)
	var out []ThreadSummary
	err := r.readTx(func(ctx context.Context, tx *sql.Tx) error {
		ids, err := newestIDs(ctx, tx, key, offset+limit)
		if err != nil {
			return err
		}
		ids = ids[min(offset, len(ids)):]
		if len(ids) == 0 {
			return nil
		}
		sums := make(map[string]*summaryBuilder, len(ids))
		for _, id := range ids {
			sums[id] = &summaryBuilder{s: ThreadSummary{ID: id}}
		}
		err = lookupManyIn(ctx, tx, kind, ids, func(e *Entry) error {
			id := e.Thread
			if kind == keyConversation {
				id = e.Conversation
			}
			if b := sums[id]; b != nil {
				b.add(e)
			}
			return nil
		})
		if err != nil {
			return err
		}
		out = make([]ThreadSummary, 0, len(ids))
		for _, id := range ids {
			if b := sums[id]; b.s.Messages > 0 {
				out = append(out, b.summary())
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: summarise: %w", err)
	}
	return out, nil
}

// newestIDs returns up to n distinct values of column key (thread or
// conversation; an empty conversation is skipped) of the committed
// journal, the most recently journaled first, walking the journal from its
// end.
func newestIDs(ctx context.Context, tx *sql.Tx, key string, n int) ([]string, error) {
	query := `SELECT seq, ` + key + ` FROM journal_rows WHERE seq < ?1 ORDER BY seq DESC LIMIT ?2`
	var (
		ids  []string
		seen = map[string]bool{}
		next = int64(1) << 62
	)
	for len(ids) < n {
		rows, err := tx.QueryContext(ctx, query, next, newestScanChunk)
		if err != nil {
			return nil, fmt.Errorf("store: newest ids: %w", err)
		}
		read := 0
		for rows.Next() && len(ids) < n {
			var id string
			if err := rows.Scan(&next, &id); err != nil {
				rows.Close()
				return nil, fmt.Errorf("store: newest ids: %w", err)
			}
			read++
			if (key == "conversation" && id == "") || seen[id] {
				continue
			}
			seen[id] = true
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("store: newest ids: %w", err)
		}
		if read < newestScanChunk {
			break
		}
	}
	return ids, nil
}

// summaryBuilder accumulates a ThreadSummary from its entries in seq
// order, as summaries' GROUP BY does.
type summaryBuilder struct {
	s           ThreadSummary
	first, last int64
	tags        []string
}

// add counts entry e.
func (b *summaryBuilder) add(e *Entry) {
	ns := e.Time.UnixNano()
	if b.s.Messages == 0 || ns < b.first {
		b.first = ns
	}
	if b.s.Messages == 0 || ns > b.last {
		b.last = ns
	}
	b.s.Messages++
	b.s.LastSeq = max(b.s.LastSeq, e.Seq)
	b.s.Conversation, b.s.LastFrom, b.s.LastTo = e.Conversation, e.From, e.To // the last seq's
	if e.PayloadTag != "" && !slices.Contains(b.tags, e.PayloadTag) {
		b.tags = append(b.tags, e.PayloadTag)
	}
	if e.Kind != Message && e.Kind != Decision {
		b.s.Failures++
	}
}

// summary is the finished summary.
func (b *summaryBuilder) summary() ThreadSummary {
	s := b.s
	s.First, s.Last = time.Unix(0, b.first).UTC(), time.Unix(0, b.last).UTC()
	if len(b.tags) > 0 {
		s.PayloadTags = slices.Sorted(slices.Values(b.tags))
	}
	return s
}

// unset reports whether f filters nothing.
func (f ThreadFilter) unset() bool {
	return f.Conversation == "" && f.IDPrefix == "" && f.Participant == "" && f.PayloadTag == "" &&
		f.Since.IsZero() && f.Until.IsZero()
}
