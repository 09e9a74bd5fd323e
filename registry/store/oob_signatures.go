package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// oobSignaturesSchema holds the signatures of the OOB requests
// the organism accepted, each until its request leaves the freshness
// window, so that a request captured before a restart is still refused
// after it (oob.ReplayCache).
const oobSignaturesSchema = `
CREATE TABLE IF NOT EXISTS oob_signatures (
	signature  BLOB    PRIMARY KEY CHECK (length(signature) > 0),
	expires_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS oob_signatures_expiry ON oob_signatures (expires_at);
`

// RememberSignature records sig, the signature of an accepted OOB request,
// as used until expires, and waits for the commit. It also forgets the
// signatures whose expiry is at or before now.
func (s *Store) RememberSignature(ctx context.Context, sig []byte, expires, now time.Time) error {
	if len(sig) == 0 {
		return fmt.Errorf("%w: empty signature", ErrInvalid)
	}
	exp, err := encodeTime("expires", expires)
	if err != nil {
		return err
	}
	at, err := encodeTime("now", now)
	if err != nil {
		return err
	}
	sig = append([]byte(nil), sig...)
	_, err = s.do(ctx, "remember signature", func(w *writer) (int64, error) {
		if _, err := w.exec(`DELETE FROM oob_signatures WHERE expires_at <= ?`, at); err != nil {
			return 0, err
		}
		return w.exec(`INSERT INTO oob_signatures (signature, expires_at) VALUES (?, ?)
			ON CONFLICT (signature) DO UPDATE SET expires_at = max(expires_at, excluded.expires_at)`, sig, exp)
	})
	return err
}

// RememberedSignatures calls fn for each signature RememberSignature
// recorded whose expiry is after now.
func (s *Store) RememberedSignatures(ctx context.Context, now time.Time, fn func(sig []byte, expires time.Time)) error {
	if err := s.readable(); err != nil {
		return err
	}
	err := eachRow(ctx, s.rdb, `SELECT signature, expires_at FROM oob_signatures WHERE expires_at > ?`,
		[]any{now.UnixNano()}, func(rows *sql.Rows) error {
			var (
				sig []byte
				exp int64
			)
			if err := rows.Scan(&sig, &exp); err != nil {
				return err
			}
			fn(sig, time.Unix(0, exp).UTC())
			return nil
		})
	if err != nil {
		return fmt.Errorf("store: read OOB signatures: %w", err)
	}
	return nil
}
