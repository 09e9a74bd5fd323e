package organism

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// profileErasSchema keeps the history of the profile definitions (the
// pump's ProfileEraJournal, seed 000 §8.5): one row per era, written when
// the definitions change (a reload, a start with an edited configuration)
// and deleted once no conversation refers to it. since is the era's start
// in Unix nanoseconds (math.MinInt64 for the first); profiles the
// definitions as JSON ([{"Name", "Listeners", "Network"}], Network null
// for no restriction).
//
//	sqlite3 -readonly data/xmlpipe.db "SELECT since, profiles FROM profile_eras ORDER BY since"
const profileErasSchema = `
CREATE TABLE IF NOT EXISTS profile_eras (
	since    INTEGER PRIMARY KEY,
	profiles TEXT    NOT NULL
);
`

// eraJournal is the pump's ProfileEraJournal in the organism's store. Its
// writes are queued, not waited for (a reload holds the routing table
// meanwhile): the store commits them in order, before any thread record
// queued after them, and logs a failure.
type eraJournal struct {
	s   *store.Store
	log *slog.Logger
}

// newEraJournal declares the table of the profile definitions' history in
// s.
func newEraJournal(s *store.Store, log *slog.Logger) (*eraJournal, error) {
	if err := s.AddSchema(context.Background(), "profile eras", profileErasSchema); err != nil {
		return nil, fmt.Errorf("organism: %w", err)
	}
	return &eraJournal{s: s, log: log}, nil
}

// done logs the failure of the write called name.
func (j *eraJournal) done(name string) func(error) {
	return func(err error) {
		if err != nil {
			j.log.Error("profiles: "+name+" failed: a restart may resolve the conversations begun before the change as the configuration then defines them",
				"err", err)
		}
	}
}

// eraNanos is the since column of an era begun at at.
func eraNanos(at time.Time) int64 {
	if at.IsZero() {
		return math.MinInt64
	}
	return at.UnixNano()
}

// ProfileEras implements pump.ProfileEraJournal.
func (j *eraJournal) ProfileEras() ([]pump.ProfileEra, error) {
	rows, err := j.s.ReadDB().QueryContext(context.Background(), `SELECT since, profiles FROM profile_eras ORDER BY since`)
	if err != nil {
		return nil, fmt.Errorf("organism: read profile eras: %w", err)
	}
	defer rows.Close()
	var out []pump.ProfileEra
	for rows.Next() {
		var since int64
		var defs []byte
		if err := rows.Scan(&since, &defs); err != nil {
			return nil, fmt.Errorf("organism: read profile eras: %w", err)
		}
		e := pump.ProfileEra{}
		if since != math.MinInt64 {
			e.Since = time.Unix(0, since).UTC()
		}
		if err := json.Unmarshal(defs, &e.Profiles); err != nil {
			return nil, fmt.Errorf("organism: read profile era since %d: %w", since, errors.Join(errBadEra, err))
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("organism: read profile eras: %w", err)
	}
	return out, nil
}

// errBadEra reports a recorded era that cannot be read.
var errBadEra = errors.New("malformed profile definitions")

// RecordProfileEra implements pump.ProfileEraJournal.
func (j *eraJournal) RecordProfileEra(e pump.ProfileEra) error {
	defs := e.Profiles
	if defs == nil {
		defs = []pump.ProfileDef{}
	}
	b, err := json.Marshal(defs)
	if err != nil {
		return fmt.Errorf("organism: record profile era: %w", err)
	}
	return j.s.WriteNow("record profile era", func(tx *store.Tx) error {
		_, err := tx.Exec(`INSERT INTO profile_eras (since, profiles) VALUES (?, ?)
			ON CONFLICT (since) DO UPDATE SET profiles = excluded.profiles`, eraNanos(e.Since), string(b))
		return err
	}, j.done("recording an era of the profile definitions"))
}

// DropProfileEras implements pump.ProfileEraJournal.
func (j *eraJournal) DropProfileEras(since []time.Time) error {
	return j.s.WriteNow("drop profile eras", func(tx *store.Tx) error {
		for _, at := range since {
			if _, err := tx.Exec(`DELETE FROM profile_eras WHERE since = ?`, eraNanos(at)); err != nil {
				return err
			}
		}
		return nil
	}, j.done("forgetting eras of the profile definitions"))
}

var _ pump.ProfileEraJournal = (*eraJournal)(nil)
