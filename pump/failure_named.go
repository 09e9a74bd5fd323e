package pump

import (
	"fmt"
	"strings"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
)

// handlerError wraps a handler's error err as failure.ErrHandler naming its
// listener, unless err's text already starts with "<name>: " (a handler
// that names itself), so operators never read "leaky: leaky: …".
func handlerError(name string, err error) error {
	if strings.HasPrefix(err.Error(), name+": ") {
		return fmt.Errorf("%w: %w", failure.ErrHandler, err)
	}
	return fmt.Errorf("%w: %s: %w", failure.ErrHandler, name, err)
}
