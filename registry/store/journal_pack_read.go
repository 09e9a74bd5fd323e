package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// packCacheSize is how many decoded packs a packReader keeps: enough for
// the packs a commit interleaves (one per listener and kind), so reading
// the journal in seq order decodes each pack once.
const packCacheSize = 16

// packReader reads entry bytes out of the journal packs of migration 7
// (journal_packs.go) for one transaction, keeping the packs it decoded
// last. Only migration 8 (migrateToSegments) reads packs.
type packReader struct {
	cache map[int64]*decodedPack
	order []int64 // cached keys, oldest first
}

// rowQuerier runs a query returning at most one row (*sql.DB, *sql.Tx).
type rowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// body returns the bytes of entry seq from pack key, read through q.
func (p *packReader) body(ctx context.Context, q rowQuerier, key, seq int64) ([]byte, error) {
	d, err := p.pack(ctx, q, key)
	if err != nil {
		return nil, err
	}
	b, ok := d.body(seq)
	if !ok {
		return nil, fmt.Errorf("%w %d: does not hold seq %d", errCorruptPack, key, seq)
	}
	return b, nil
}

// pack returns pack key decoded, from the cache or through q.
func (p *packReader) pack(ctx context.Context, q rowQuerier, key int64) (*decodedPack, error) {
	if d, ok := p.cache[key]; ok {
		return d, nil
	}
	var (
		codec int64
		data  []byte
	)
	err := q.QueryRowContext(ctx, `SELECT codec, data FROM journal_packs WHERE first_seq = ?`, key).Scan(&codec, &data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w %d: missing", errCorruptPack, key)
	}
	if err != nil {
		return nil, fmt.Errorf("read journal pack %d: %w", key, err)
	}
	d, err := decodePack(key, codec, data)
	if err != nil {
		return nil, err
	}
	if p.cache == nil {
		p.cache = make(map[int64]*decodedPack, packCacheSize)
	}
	if len(p.order) == packCacheSize {
		delete(p.cache, p.order[0])
		p.order = append(p.order[:0], p.order[1:]...)
	}
	p.cache[key] = d
	p.order = append(p.order, key)
	return d, nil
}
