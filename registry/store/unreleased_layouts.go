package store

import "fmt"

// unreleasedLayouts are the layouts development builds of xmlpipe wrote
// before anything was released, each for a few hours, by layout version
// (user_version), with the day they were written. None is migrated: only
// the legacy segment layout before them is (legacy.go), straight into the
// current layout; Open and OpenReadOnly refuse a database of one of these
// with ErrUnreleasedLayout, leaving it as it is.
var unreleasedLayouts = map[int]string{
	1: "2026-11-26", // the journal as one row per envelope
	2: "2026-11-27", // the security profiles of users and threads
	3: "2026-11-27", // each journal entry's profile, pruned entries' metadata
	4: "2026-11-27", // a journal row's names as ids into journal_names
	5: "2026-11-27", // a journal row's route as an id into journal_routes
}

// unreleasedAdvice is what ErrUnreleasedLayout tells the owner to do.
const unreleasedAdvice = "this binary does not migrate it: export its journal with that build's " +
	"`xmlpipe journal export`, or move the data directory away and start with a fresh one"

// layoutError returns why this binary neither opens nor migrates the
// database of the data directory dir, of layout version and legacy schema
// version legacy (0: not of the legacy layout), or nil when it can.
func layoutError(dir string, version, legacy int) error {
	if version > layoutVersion {
		return fmt.Errorf("%w: database layout %d, this binary knows up to %d", ErrSchemaTooNew, version, layoutVersion)
	}
	if legacy > 0 {
		if legacy < minLegacyVersion {
			return fmt.Errorf("%w (data directory %s: legacy schema %d); %s", ErrUnreleasedLayout, dir, legacy,
				unreleasedAdvice)
		}
		return nil
	}
	if day, ok := unreleasedLayouts[version]; ok {
		return fmt.Errorf("%w (data directory %s: layout %d, %s); %s", ErrUnreleasedLayout, dir, version, day,
			unreleasedAdvice)
	}
	return nil
}
