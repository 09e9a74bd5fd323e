package store

import (
	"database/sql"
	"fmt"
	"math"
	"time"
)

// Times are stored as INTEGER Unix nanoseconds, which round-trip every
// instant exactly and sort numerically; the zero time is stored as NULL.
// Loaded times are in UTC.
var (
	minStorableTime = time.Unix(0, math.MinInt64+1)
	maxStorableTime = time.Unix(0, math.MaxInt64)
)

// encodeTime converts t to its column value: nil for the zero time, Unix
// nanoseconds otherwise. Instants outside int64 nanoseconds are rejected.
func encodeTime(field string, t time.Time) (any, error) {
	if t.IsZero() {
		return nil, nil
	}
	if t.Before(minStorableTime) || t.After(maxStorableTime) {
		return nil, fmt.Errorf("%w: %s %s is outside the storable range", ErrInvalid, field, t)
	}
	return t.UnixNano(), nil
}

// decodeTime converts a column value back: NULL is the zero time.
func decodeTime(ns sql.NullInt64) time.Time {
	if !ns.Valid {
		return time.Time{}
	}
	return time.Unix(0, ns.Int64).UTC()
}
