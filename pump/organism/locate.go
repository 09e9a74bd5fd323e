package organism

import (
	"errors"
	"fmt"

	"github.com/xml-pipeline/xmlpipe/listeners/wasm"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// locator returns the prefix of an error about a listener: where the key
// it concerns was written ("" for the entry itself) and the listener's
// name, said once — "organism.yaml:9: listener c".
type locator func(key string) string

// entryLocator locates the errors about listeners[i] of cfg at the line
// of the key each concerns (the entry's line when the key was not written).
func entryLocator(cfg *config.Organism, i int, name string) locator {
	return func(key string) string {
		path := fmt.Sprintf("listeners[%d]", i)
		if key != "" {
			path += "." + key
		}
		return cfg.Pos(path).String() + ": listener " + name
	}
}

// fixedLocator prefixes every error with where: a listener that is no
// entry of a file (a system listener, an implicit tool, one added while
// running).
func fixedLocator(where string) locator {
	return func(string) string { return where }
}

// wrap prefixes err with where it is: at the key a *wasm.OptionError
// names, else at the entry.
func (at locator) wrap(err error) error {
	key := ""
	if oe, ok := errors.AsType[*wasm.OptionError](err); ok {
		key = oe.Key
	}
	return fmt.Errorf("%s: %w", at(key), err)
}

// named is err without the *pump.ChangeError that names its listener, for
// a caller whose own prefix names the listener already (a file:line and
// "listener name", "agent name", "tool name"): the name is said once.
func named(err error) error {
	if ce, ok := errors.AsType[*pump.ChangeError](err); ok {
		return ce.Err
	}
	return err
}
