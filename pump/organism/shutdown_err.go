package organism

import (
	"fmt"

	"github.com/xml-pipeline/xmlpipe/pump"
)

// errShutDown is what Ask, AskText, Continue and ContinueText refuse with,
// before looking at what they were asked, once the organism was shut down
// (Shutdown, ShutdownNow, Stop), whether or not it had started. It wraps
// pump.ErrClosed, the error of a pump that stopped.
var errShutDown = fmt.Errorf("organism: shut down: %w", pump.ErrClosed)

// checkRunning returns errShutDown once a shutdown of the organism began.
func (o *Organism) checkRunning() error {
	o.shutMu.Lock()
	defer o.shutMu.Unlock()
	if o.shutting {
		return errShutDown
	}
	return nil
}
