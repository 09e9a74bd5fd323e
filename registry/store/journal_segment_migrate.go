package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// migrateChunk is how many journal rows migrateToSegments reads at a time.
const migrateChunk = 4096

// migrateToSegments is migration 8's Go step: it moves the journal rows of
// migration 7, with the bytes of their packs, into segments of consecutive
// seqs, then drops the journal and its packs. A pack that does not decode
// fails the migration (and so opening the store) rather than lose entries.
func migrateToSegments(ctx context.Context, tx *sql.Tx) error {
	var (
		after int64
		packs packReader
		enc   segmentEncoder
		run   []*Entry
		size  int
	)
	flush := func() error {
		if len(run) == 0 {
			return nil
		}
		first, last := run[0].Seq, run[len(run)-1].Seq
		data := enc.encode(nil, first, run)
		if _, err := tx.ExecContext(ctx, `INSERT INTO journal_segments (`+segmentColumns+`) VALUES (?, ?, ?, ?, ?)`,
			first, last, len(run), segmentCodecS2, data); err != nil {
			return fmt.Errorf("insert segment %d..%d: %w", first, last, err)
		}
		run, size = run[:0], 0
		return nil
	}
	for {
		rows, err := tx.QueryContext(ctx, `SELECT seq, time_ns, thread, conversation, direction, kind, from_name,
			to_name, listener, payload_tag, sha256, bytes, diagnostics, coalesce(pack, 0)
			FROM journal WHERE seq > ? ORDER BY seq LIMIT ?`, after, migrateChunk)
		entries, err := packs.scanV7Rows(ctx, tx, rows, err)
		if err != nil {
			return err
		}
		if len(entries) == 0 {
			break
		}
		for i := range entries {
			e := &entries[i]
			if len(run) > 0 && (e.Seq != run[len(run)-1].Seq+1 || len(run) == segmentMaxEntries ||
				size+len(e.Bytes) > segmentMaxRaw) {
				if err := flush(); err != nil {
					return err
				}
			}
			run = append(run, e)
			size += len(e.Bytes)
		}
		after = entries[len(entries)-1].Seq
		if err := flush(); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `DROP TABLE journal_packs; DROP TABLE journal`); err != nil {
		return fmt.Errorf("drop the journal rows: %w", err)
	}
	return nil
}

// scanV7Rows reads and closes the journal rows of migration 7 a query
// returned, then fills in the bytes of packed rows through q.
func (p *packReader) scanV7Rows(ctx context.Context, q rowQuerier, rows *sql.Rows, err error) ([]Entry, error) {
	if err != nil {
		return nil, fmt.Errorf("read journal rows: %w", err)
	}
	defer rows.Close()
	var (
		out  []Entry
		keys []int64
	)
	for rows.Next() {
		var (
			e         Entry
			ns, pack  int64
			dir, kind string
			sum       []byte
		)
		if err := rows.Scan(&e.Seq, &ns, &e.Thread, &e.Conversation, &dir, &kind, &e.From, &e.To,
			&e.Listener, &e.PayloadTag, &sum, &e.Bytes, &e.Diagnostics, &pack); err != nil {
			return nil, fmt.Errorf("read journal row: %w", err)
		}
		e.Time = time.Unix(0, ns).UTC()
		e.Direction, _ = ParseDirection(dir)
		e.Kind, _ = ParseKind(kind)
		copy(e.SHA256[:], sum)
		out = append(out, e)
		keys = append(keys, pack)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read journal rows: %w", err)
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("read journal rows: %w", err)
	}
	for i, key := range keys {
		if key == 0 {
			continue
		}
		if out[i].Bytes, err = p.body(ctx, q, key, out[i].Seq); err != nil {
			return nil, fmt.Errorf("journal seq %d: %w", out[i].Seq, err)
		}
	}
	return out, nil
}
