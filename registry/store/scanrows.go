package store

import (
	"context"
	"database/sql"
	"fmt"
)

// queryer runs queries: a *sql.DB, *sql.Conn or *sql.Tx.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// eachRow runs query on q and calls row, which scans it, for each result
// row; the first error ends the loop and is returned unwrapped.
func eachRow(ctx context.Context, q queryer, query string, args []any, row func(rows *sql.Rows) error) error {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := row(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// scanRows is eachRow collecting what scan reads of each row, in order.
func scanRows[T any](ctx context.Context, q queryer, query string, args []any, scan func(rows *sql.Rows) (T, error)) ([]T, error) {
	var out []T
	err := eachRow(ctx, q, query, args, func(rows *sql.Rows) error {
		v, err := scan(rows)
		if err == nil {
			out = append(out, v)
		}
		return err
	})
	return out, err
}

// scanInt64 reads a row of one integer column.
func scanInt64(rows *sql.Rows) (int64, error) {
	var n int64
	err := rows.Scan(&n)
	return n, err
}

// load is scanRows on the read pool for a Store method: ErrClosed after
// Close, any other error wrapped as "store: <what>: …".
func load[T any](ctx context.Context, s *Store, what, query string, args []any, scan func(rows *sql.Rows) (T, error)) ([]T, error) {
	if err := s.readable(); err != nil {
		return nil, err
	}
	out, err := scanRows(ctx, s.rdb, query, args, scan)
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", what, err)
	}
	return out, nil
}
