package pump

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"time"
)

// ProfileEra is one era of the profile definitions: what they were from
// Since on, until the next era began.
type ProfileEra struct {
	// Since is when the era began; zero for the first (all time before
	// the next).
	Since time.Time
	// Profiles are the definitions as the pump was given them (SetProfiles,
	// ListenerChange.Profiles; empty: none).
	Profiles []ProfileDef
}

// ProfileEraJournal keeps the history of the profile definitions across
// restarts (Options.ProfileEras), so a conversation restored after a
// restart never routes wider than the definitions it began with (seed 000
// §8.5). The pump writes to it only when the definitions change (a reload
// that changes a profile, a start whose definitions differ from the last
// recorded) and when eras no conversation refers to any more are dropped.
type ProfileEraJournal interface {
	// ProfileEras returns the recorded eras, oldest first.
	ProfileEras() ([]ProfileEra, error)
	// RecordProfileEra records e (replacing an era recorded with the same
	// Since). It may return before the record is committed, but the record
	// must be durable before anything the organism persists after the call
	// (a thread of a conversation begun in e): it is called while routing
	// edits wait, so it should not wait for a commit.
	RecordProfileEra(e ProfileEra) error
	// DropProfileEras forgets the eras that began at the given times (it
	// need not wait for the commit either).
	DropProfileEras(since []time.Time) error
}

// eraTime is the ProfileEra.Since of an era begun at since.
func eraTime(since int64) time.Time {
	if since == math.MinInt64 {
		return time.Time{}
	}
	return time.Unix(0, since).UTC()
}

// eraTimes is eraTime of each of since.
func eraTimes(since []int64) []time.Time {
	out := make([]time.Time, len(since))
	for i, s := range since {
		out[i] = eraTime(s)
	}
	return out
}

// recordEras records in the ProfileEraJournal the eras of eras it has not
// recorded yet. A failure is logged and retried at the next change: the
// history stays in force in memory either way.
func (p *Pump) recordEras(eras []*profileEra) {
	j := p.opts.ProfileEras
	if j == nil {
		return
	}
	for _, e := range eras {
		if e.recorded {
			continue
		}
		if err := j.RecordProfileEra(ProfileEra{Since: eraTime(e.key), Profiles: slices.Clone(e.defs)}); err != nil {
			p.log.Error("profiles: recording the profile definitions' history failed; a restart may resolve the conversations begun before this change as the configuration then defines them",
				"err", err)
			return
		}
		e.recorded = true
	}
}

// restoreEras puts the history the ProfileEraJournal recorded in force (p
// is starting): each era's definitions as recorded, and when the
// definitions installed now differ from the last recorded, an era of their
// own beginning now. The first era covers all time before the second.
func (p *Pump) restoreEras() error {
	j := p.opts.ProfileEras
	if j == nil {
		return nil
	}
	stored, err := j.ProfileEras()
	if err != nil {
		return fmt.Errorf("pump: restore the profile definitions' history: %w", err)
	}
	eras := make([]*profileEra, 0, len(stored)+1)
	for _, se := range stored {
		compiled, err := compileProfiles(se.Profiles)
		if err != nil {
			return fmt.Errorf("pump: restore the profile definitions' history: era since %s: %w", se.Since, err)
		}
		key := int64(math.MinInt64)
		if !se.Since.IsZero() {
			key = se.Since.UnixNano()
		}
		since := key
		if len(eras) == 0 {
			since = math.MinInt64
		} else if since <= eras[len(eras)-1].since {
			return fmt.Errorf("pump: restore the profile definitions' history: era since %s: %w", se.Since, errErasOrder)
		}
		eras = append(eras, &profileEra{since: since, key: key, recorded: true, profiles: compiled, defs: se.Profiles})
	}
	return p.editRoutes(func(t *table) (*table, error) {
		nt := t.copyWith(func(*listener) bool { return true }, nil)
		hist := eras
		if len(hist) == 0 || !reflect.DeepEqual(t.profiles, hist[len(hist)-1].profiles) {
			since := int64(math.MinInt64)
			if len(hist) > 0 {
				since = max(p.opts.Clock().UnixNano(), hist[len(hist)-1].since+1)
			}
			hist = append(hist, &profileEra{since: since, key: since, profiles: t.profiles, defs: t.profileSrc})
		}
		if len(hist) > 1 {
			hist = p.pruneEras(hist)
		}
		p.erasPruneAt = max(minErasPruned, 2*len(hist))
		p.recordEras(hist)
		nt.eras = hist
		return nt, nil
	})
}

// errErasOrder reports a recorded history whose eras are out of order.
var errErasOrder = errors.New("eras out of order")
