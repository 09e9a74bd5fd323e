package organism

import (
	"errors"
	"fmt"

	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// nearest tells an unknown catalog name (err is unknown, a sentinel of
// package catalog) by the accepted name a typo of it meant — a Python
// alias included — instead of the list of the catalog's own names, when
// one is that close; any other error is returned as it is.
func nearest(err, unknown error, name string, accepted []string) error {
	if !errors.Is(err, unknown) {
		return err
	}
	if hint := config.Suggest(name, accepted); hint != "" {
		return fmt.Errorf("%w %q%s", unknown, name, hint)
	}
	return err
}
